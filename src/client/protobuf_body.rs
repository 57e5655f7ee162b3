//! Request bodies in protobuf (feature `protobuf`): when a create or an update of a built-in
//! type goes as `application/vnd.kubernetes.protobuf`, and when it stays JSON.
//!
//! Why a file of its own: the rule is the whole point. kube-apiserver decodes a protobuf body
//! faster than JSON, but a body must never carry less than its JSON would. So protobuf is
//! sent only when every one of these holds, and JSON otherwise, for that write alone:
//!
//! - the client allows it ([`ClientConfig::protobuf_bodies`](super::ClientConfig), default
//!   on), and no 415 has moved this type back to JSON on this client;
//! - `K` is a full object type with a built-in message (`protobuf_message()`), and the
//!   `Api`'s resource is that very type (never a custom resource: kube-apiserver's CRD
//!   handler crashes on a protobuf body and never answers; never a metadata-only type, whose
//!   writes send whatever body the caller gives);
//! - the write does not ask for `fieldValidation=Strict`: the server finds unknown fields
//!   only in JSON, so protobuf would turn its 400 into a silent drop;
//! - the codec encodes the body *exactly* ([`encode_exact`](crate::protobuf::encode_exact)):
//!   a member the tables do not know (a newer k8s-openapi's field, a user type's extra
//!   field), a value Go's JSON would read differently, or `apiVersion`/`kind` naming another
//!   type make it JSON. Nothing is remembered from such a refusal: the next object of the
//!   same type may encode fine.
//!
//! Patches are never protobuf (kube-apiserver answers 415). A 415 to a protobuf body (an
//! aggregated API, an older server) is answered by the `Api` with the same write in JSON,
//! once, and the type is remembered here so its writes go JSON from then on.

use std::collections::HashSet;

use serde::Serialize;

use super::write_params::{FieldValidation, PostParams};
use super::Client;
use crate::api::{ApiResource, Object};
use crate::protobuf as pb;

/// The types (`apiVersion`, `kind`) a 415 moved back to JSON, per client. Only types with a
/// built-in message get here, so it holds at most the tables' few hundred kinds.
#[derive(Default)]
pub(crate) struct JsonBodies(parking_lot::Mutex<HashSet<(String, String)>>);

impl JsonBodies {
    fn has(&self, resource: &ApiResource) -> bool {
        self.0
            .lock()
            .contains(&(resource.api_version(), resource.kind.clone()))
    }
}

/// The protobuf body (`k8s\0` envelope) of a create or update of `object` to `resource`,
/// or `None` when this write must go as JSON (see the module docs).
pub(crate) fn encode<K: Object, B: Serialize + ?Sized>(
    client: &Client,
    resource: &ApiResource,
    params: &PostParams,
    object: &B,
) -> Option<Vec<u8>> {
    let json_bodies = client.protobuf_bodies()?;
    if K::ACCEPT != "application/json" || params.field_validation == Some(FieldValidation::Strict) {
        return None;
    }
    let message = K::protobuf_message()?;
    let api_version = resource.api_version();
    if pb::message_for(&api_version, &resource.kind) != Some(message) || json_bodies.has(resource) {
        return None;
    }
    match pb::encode_exact(message, (&api_version, &resource.kind), object) {
        Ok(raw) => {
            let mut body =
                Vec::with_capacity(raw.len() + 16 + api_version.len() + resource.kind.len());
            pb::write_envelope(&api_version, &resource.kind, &raw, &mut body);
            Some(body)
        }
        Err(e) => {
            // The error names a field path, never a value.
            log::debug!(
                "{} {}: sent as JSON, protobuf cannot carry it exactly: {e}",
                api_version,
                resource.kind
            );
            None
        }
    }
}

/// Remembers that `resource`'s server refused a protobuf body (415): JSON from now on.
pub(crate) fn refused(client: &Client, resource: &ApiResource) {
    if let Some(json_bodies) = client.protobuf_bodies() {
        json_bodies
            .0
            .lock()
            .insert((resource.api_version(), resource.kind.clone()));
    }
}
