//! The answer helpers every room writes with: an HTTP exchange's [`Outcome`], a `Status` body
//! as kube-apiserver words it ([`status_json`], [`write_status`]), and list continue tokens
//! ([`encode_continue`], [`decode_continue`], [`continue_expired`]).
//!
//! Why a file of its own: the router (`handlers.rs`) dispatches to every room, and the rooms
//! (the kubelet's pod answers, reviews, conversion, writes) answer with these helpers. Kept in
//! the router, they made each room import the router that imports it; here they depend on
//! nothing but `http.rs` (and `protobuf_answers.rs` under the `protobuf` feature).

use std::io::{self, Write};

use base64::Engine as _;
use serde_json::Value;

use super::http;
use crate::api::Status;

/// Whether the connection can serve another request.
pub(crate) enum Outcome {
    KeepAlive,
    Close,
}

/// `KeepAlive` when the answer was written, `Close` when the connection failed.
pub(crate) fn outcome(r: io::Result<()>) -> Outcome {
    match r {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    }
}

/// A Status as the API server writes it: `kind`, `apiVersion`, `metadata` first.
pub(crate) fn status_json(st: &Status) -> String {
    let meta = serde_json::to_string(&st.metadata).unwrap_or_else(|_| "{}".into());
    let mut s = format!(
        "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{meta},\"status\":\"Failure\",\"message\":{}",
        Value::from(st.message.as_str()),
    );
    // Some answers (apply's HTTP 500) carry no reason at all.
    if !st.reason.is_empty() {
        s.push_str(",\"reason\":");
        s.push_str(&Value::from(st.reason.as_str()).to_string());
    }
    if let Some(d) = &st.details {
        s.push_str(",\"details\":");
        s.push_str(&serde_json::to_string(d).unwrap_or_else(|_| "{}".into()));
    }
    s.push_str(&format!(",\"code\":{}}}", st.code));
    s
}

pub(crate) fn write_status(
    w: &mut impl Write,
    st: &Status,
    extra: &[(&str, String)],
) -> io::Result<()> {
    #[cfg(feature = "protobuf")]
    if super::protobuf_answers::active() {
        if let Some(body) = super::protobuf_answers::status(st) {
            let ct = crate::protobuf::CONTENT_TYPE;
            return http::write_response_typed(w, st.code, ct, extra, &body);
        }
    }
    http::write_response(w, st.code, extra, status_json(st).as_bytes())
}

#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct ContinueToken {
    v: String,
    pub(crate) rv: i64,
    pub(crate) start: String,
}

pub(crate) fn encode_continue(rv: i64, start: &str) -> String {
    let tok = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv,
        start: start.into(),
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&tok).unwrap_or_default())
}

pub(crate) fn decode_continue(token: &str) -> Result<ContinueToken, Status> {
    let bad = |why: &str| {
        Status::failure(
            400,
            "BadRequest",
            format!("continue key is not valid: {why}"),
        )
    };
    let t = token.trim_end_matches('=');
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(t)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(t))
        .map_err(|_| bad("illegal base64 data"))?;
    let tok: ContinueToken =
        serde_json::from_slice(&bytes).map_err(|_| bad("not a continue token"))?;
    if tok.v != "meta.k8s.io/v1" {
        return Err(bad(
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    Ok(tok)
}

const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// The 410 of a continue token whose version was compacted away.
pub(crate) fn continue_expired(tok: &ContinueToken) -> Status {
    let mut st = Status::failure(410, "Expired", CONTINUE_EXPIRED);
    st.metadata.continue_token = Some(encode_continue(-1, &tok.start));
    st
}
