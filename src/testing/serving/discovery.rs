//! Discovery as the test server serves it: `/api`, `/api/v1`, `/apis`, `/apis/G`, `/apis/G/V`
//! and aggregated discovery (`apidiscovery.k8s.io/v2` on `/api` and `/apis`, with an ETag and
//! `304` to `If-None-Match`), with the headers of the captures.
//!
//! What it lists: the built-in resources of a real v1.36 server (the aggregated documents
//! captured from it, in `discovery_builtins.json`), plus every resource registered with
//! [`ApiServerBuilder::resource`](crate::testing::ApiServerBuilder::resource) (or `subresources`,
//! `schema_fields`) that is not one of them: a custom resource as a CRD would show it
//! (singular = lower-cased kind, the CRD verbs, its declared `status`/`scale`
//! subresources and [`short_names`](crate::testing::ApiServerBuilder::short_names)), its group after the built-in ones,
//! and every resource of a CRD written through the API (until the CRD is deleted; see
//! `crd_lifecycle.rs`). A group or version nothing serves is the plain-text `404 page not
//! found` kube-apiserver sends. The legacy documents are derived from
//! the same model. [`ApiServer::set_aggregated_discovery`](crate::testing::ApiServer::set_aggregated_discovery)
//! switches v2 off (the `Accept` fallback then answers the legacy form, like an old server).
//!
//! Simplifications: no `storageVersionHash` in the legacy documents; resources that only
//! appear through objects created on the fly (never registered) are not listed; the ETag
//! is a hash of the body, not the real server's SHA-512 (same shape: 128 upper-case hex
//! digits, quoted); the body is sent with a `Content-Length` (the real one is chunked).

use std::io::{self, Write};

use serde_json::{json, Value};

use super::answers::Outcome;
use super::builtins::BUILTINS;
use super::db::Db;
use super::http::Request;
use super::resources::is_builtin_group;
use super::store::TypeKey;
use crate::api::ApiResource;

const AGGREGATED_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const CRD_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// Answers a discovery request; `None` when the path is not one.
/// What discovery needs of the server beside the store: the resources and short names it
/// was built with, and whether it answers aggregated discovery. The server implements it.
pub(crate) trait DiscoveryHost: std::ops::Deref<Target = Db> {
    /// The resources given to the builder (`ApiServerBuilder::resource`).
    fn configured_resources(&self) -> &[ApiResource];
    /// The short names given to the builder (`ApiServerBuilder::short_names`).
    fn configured_short_names(&self) -> &[(ApiResource, Vec<String>)];
    /// Whether `/api` and `/apis` answer aggregated discovery when asked for it.
    fn aggregated_discovery(&self) -> bool;
}

pub(crate) fn handle<W: Write>(
    req: &Request,
    peer: &mut W,
    shared: &impl DiscoveryHost,
) -> Option<Outcome> {
    if req.method != "GET" {
        return None;
    }
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let answer = match segs.as_slice() {
        ["api"] => Some(root(req, shared, true)),
        ["apis"] => Some(root(req, shared, false)),
        ["api", v] => Some(resource_list(shared, "", v)),
        ["apis", g] => Some(group_doc(shared, g)),
        ["apis", g, v] => Some(resource_list(shared, g, v)),
        _ => None,
    }?;
    let result = match answer {
        Answer::Json(body) => write(
            peer,
            200,
            "no-cache, private",
            Some("application/json"),
            &[],
            Some(&body),
        ),
        // A group or version nothing serves (a deleted CRD's among them): the Go mux's
        // plain-text 404, as captured (`crd-deleted/after-5s-discovery-group*.json`).
        Answer::NotFound => super::http::write_page_not_found(peer),
        Answer::Aggregated { body, etag } => {
            let tag = format!("\"{etag}\"");
            let extra = [("etag", tag.clone()), ("vary", "Accept".to_owned())];
            if req.header("if-none-match") == Some(tag.as_str()) {
                write(peer, 304, "public", None, &extra, None)
            } else {
                write(
                    peer,
                    200,
                    "public",
                    Some(AGGREGATED_TYPE),
                    &extra,
                    Some(&body),
                )
            }
        }
    };
    Some(match result {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    })
}

enum Answer {
    Json(Value),
    Aggregated { body: Value, etag: String },
    NotFound,
}

fn write<W: Write>(
    w: &mut W,
    code: u16,
    cache_control: &str,
    content_type: Option<&str>,
    extra: &[(&str, String)],
    body: Option<&Value>,
) -> io::Result<()> {
    let reason = match code {
        200 => "OK",
        304 => "Not Modified",
        _ => "Not Found",
    };
    let mut head = format!("HTTP/1.1 {code} {reason}\r\ncache-control: {cache_control}\r\n");
    if let Some(ct) = content_type {
        head.push_str(&format!("content-type: {ct}\r\n"));
    }
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let bytes = body.map(|b| {
        let mut s = b.to_string();
        s.push('\n');
        s
    });
    if let Some(b) = &bytes {
        head.push_str(&format!("content-length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    // Head and body in one write (the server sets TCP_NODELAY; this is tidiness, not speed).
    if let Some(b) = bytes {
        head.push_str(&b);
    }
    w.write_all(head.as_bytes())?;
    w.flush()
}

/// `/api` or `/apis`: aggregated when asked for and enabled, legacy otherwise.
fn root(req: &Request, shared: &impl DiscoveryHost, core: bool) -> Answer {
    let groups = model(shared);
    let wants_v2 = req.header("accept").is_some_and(|a| {
        a.split(',').any(|t| {
            let t = t.replace(' ', "");
            t.contains("g=apidiscovery.k8s.io")
                && t.contains("v=v2")
                && t.contains("as=APIGroupDiscoveryList")
        })
    });
    let mine: Vec<&Group> = groups
        .iter()
        .filter(|g| g.name.is_empty() == core)
        .collect();
    if wants_v2 && shared.aggregated_discovery() {
        let items: Vec<Value> = mine
            .iter()
            .map(|g| {
                let metadata = if g.name.is_empty() {
                    json!({})
                } else {
                    json!({"name": g.name})
                };
                let versions: Vec<Value> = g
                    .versions
                    .iter()
                    .map(|(v, rs)| json!({"version": v, "resources": rs, "freshness": "Current"}))
                    .collect();
                json!({"metadata": metadata, "versions": versions})
            })
            .collect();
        let body = json!({"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":items});
        let etag = etag_of(body.to_string().as_bytes());
        return Answer::Aggregated { body, etag };
    }
    if core {
        let host = req.header("host").unwrap_or("127.0.0.1").to_owned();
        let versions: Vec<&String> = mine
            .iter()
            .flat_map(|g| g.versions.iter().map(|(v, _)| v))
            .collect();
        Answer::Json(
            json!({"kind":"APIVersions","versions":versions,"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":host}]}),
        )
    } else {
        let groups: Vec<Value> = mine.iter().map(|g| legacy_group(g)).collect();
        Answer::Json(json!({"kind":"APIGroupList","apiVersion":"v1","groups":groups}))
    }
}

fn legacy_group(g: &Group) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{}/{v}", g.name), "version": v});
    let versions: Vec<Value> = g.versions.iter().map(|(v, _)| gv(v)).collect();
    let preferred = g
        .versions
        .first()
        .map(|(v, _)| gv(v))
        .unwrap_or(Value::Null);
    json!({"name": g.name, "versions": versions, "preferredVersion": preferred})
}

/// `/apis/G`: the `APIGroup`.
fn group_doc(shared: &impl DiscoveryHost, group: &str) -> Answer {
    match model(shared)
        .iter()
        .find(|g| g.name == group && !group.is_empty())
    {
        Some(g) => {
            let mut doc = legacy_group(g);
            if let Value::Object(m) = &mut doc {
                m.insert("kind".into(), json!("APIGroup"));
                m.insert("apiVersion".into(), json!("v1"));
            }
            Answer::Json(doc)
        }
        None => Answer::NotFound,
    }
}

/// `/api/v1`, `/apis/G/V`: the legacy `APIResourceList`, subresources as `plural/sub`.
fn resource_list(shared: &impl DiscoveryHost, group: &str, version: &str) -> Answer {
    let groups = model(shared);
    let Some(resources) = groups
        .iter()
        .find(|g| g.name == group)
        .and_then(|g| g.versions.iter().find(|(v, _)| v == version))
        .map(|(_, rs)| rs)
    else {
        return Answer::NotFound;
    };
    let mut list = Vec::new();
    for r in resources {
        let namespaced = r["scope"] == "Namespaced";
        let kind = r["responseKind"]["kind"].clone();
        let mut entry = json!({
            "name": r["resource"], "singularName": r["singularResource"], "namespaced": namespaced,
            "kind": kind, "verbs": r["verbs"],
        });
        for (from, to) in [("shortNames", "shortNames"), ("categories", "categories")] {
            if let Some(v) = r.get(from) {
                entry[to] = v.clone();
            }
        }
        list.push(entry);
        for s in r
            .get("subresources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut sub = json!({
                "name": format!("{}/{}", r["resource"].as_str().unwrap_or(""), s["subresource"].as_str().unwrap_or("")),
                "singularName": "", "namespaced": namespaced, "kind": s["responseKind"]["kind"], "verbs": s["verbs"],
            });
            let rk = &s["responseKind"];
            if rk["group"]
                .as_str()
                .is_some_and(|g| !g.is_empty() && g != group)
            {
                sub["group"] = rk["group"].clone();
                sub["version"] = rk["version"].clone();
            }
            list.push(sub);
        }
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let mut doc = json!({"kind":"APIResourceList","groupVersion":gv,"resources":list});
    if !group.is_empty() {
        doc["apiVersion"] = json!("v1");
    }
    Answer::Json(doc)
}

struct Group {
    name: String,
    /// Versions (preferred first) and their aggregated resource entries.
    versions: Vec<(String, Vec<Value>)>,
}

/// The built-ins, then the registered resources they do not already list.
fn model(shared: &impl DiscoveryHost) -> Vec<Group> {
    let builtins: Value = serde_json::from_str(BUILTINS).unwrap_or(Value::Null);
    let mut groups: Vec<Group> = Vec::new();
    for doc in ["api", "apis"] {
        for item in builtins[doc]["items"].as_array().into_iter().flatten() {
            let versions = item["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| {
                    (
                        v["version"].as_str().unwrap_or("").to_owned(),
                        v["resources"].as_array().cloned().unwrap_or_default(),
                    )
                })
                .collect();
            groups.push(Group {
                name: item["metadata"]["name"].as_str().unwrap_or("").to_owned(),
                versions,
            });
        }
    }
    let mut seen: Vec<TypeKey> = Vec::new();
    // The builder's resources, then those of the CRDs written through the API; none that a
    // CRD's deletion took away.
    let (defined, removed): (Vec<(ApiResource, Vec<String>)>, Vec<TypeKey>) = {
        let store = shared.store.lock();
        let defined: Vec<_> = store.serving.defined().cloned().collect();
        let removed = shared
            .configured_resources()
            .iter()
            .map(TypeKey::of)
            .filter(|tk| store.serving.is_removed(tk))
            .collect();
        (defined, removed)
    };
    let resources = shared
        .configured_resources()
        .iter()
        .map(|ar| (ar, None))
        .chain(defined.iter().map(|(ar, short)| (ar, Some(short))));
    for (ar, defined_short_names) in resources {
        let tk = TypeKey::of(ar);
        if seen.contains(&tk) || removed.contains(&tk) {
            continue;
        }
        seen.push(tk.clone());
        let gi = match groups.iter().position(|g| g.name == ar.group) {
            Some(i) => i,
            None => {
                groups.push(Group {
                    name: ar.group.clone(),
                    versions: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[gi];
        let vi = match group.versions.iter().position(|(v, _)| *v == ar.version) {
            Some(i) => i,
            None => {
                group.versions.push((ar.version.clone(), Vec::new()));
                group.versions.len() - 1
            }
        };
        let resources = &mut group.versions[vi].1;
        if resources
            .iter()
            .any(|r| r["resource"] == ar.plural.as_str())
        {
            continue;
        }
        let builtin = is_builtin_group(&ar.group);
        let response_kind = if builtin {
            json!({"group": "", "version": "", "kind": ar.kind})
        } else {
            json!({"group": ar.group, "version": ar.version, "kind": ar.kind})
        };
        let info = shared
            .store
            .lock()
            .collection(&tk)
            .info
            .subresources
            .clone();
        let mut subresources = Vec::new();
        if info.scale.is_some() {
            subresources.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]}));
        }
        if info.status {
            subresources.push(json!({"subresource": "status", "responseKind": response_kind, "verbs": ["get", "patch", "update"]}));
        }
        let mut r = json!({
            "resource": ar.plural,
            "responseKind": response_kind,
            "scope": if ar.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": ar.kind.to_ascii_lowercase(),
            "verbs": CRD_VERBS,
        });
        let short: Vec<&String> = match defined_short_names {
            Some(names) => names.iter().collect(),
            None => shared
                .configured_short_names()
                .iter()
                .filter(|(a, _)| TypeKey::of(a) == tk)
                .flat_map(|(_, n)| n)
                .collect(),
        };
        if !short.is_empty() {
            r["shortNames"] = json!(short);
        }
        if !subresources.is_empty() {
            r["subresources"] = Value::Array(subresources);
        }
        resources.push(r);
    }
    groups
}

/// 128 upper-case hex digits from the body (eight FNV-1a hashes with different seeds).
fn etag_of(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(128);
    for seed in 0..8u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016X}"));
    }
    out
}
