//! Authentication and authorisation reviews, as kube-apiserver answers them, so that a
//! server authenticating its own callers (secure `/metrics`, a webhook) can be tested end to
//! end: `TokenReview`, `SubjectAccessReview`, `SelfSubjectReview` and `TokenRequest` (the
//! `token` subresource of `serviceaccounts`).
//!
//! Who is who, simplified and stated:
//! - a token given to [`ApiServerBuilder::token`](crate::testing::ApiServerBuilder::token), and the
//!   admin client certificate, are `kube-admin` in `system:masters`;
//! - [`ApiServerBuilder::user_token`](crate::testing::ApiServerBuilder::user_token) names a token's user
//!   and groups;
//! - a `TokenRequest` for a service account that exists (404 otherwise, as the real server)
//!   or [`ApiServer::issue_token`](crate::testing::ApiServer::issue_token) gives an opaque token
//!   (not a JWT) of `system:serviceaccount:<ns>:<name>`, in `system:serviceaccounts`,
//!   `system:serviceaccounts:<ns>` and `system:authenticated`, for the audiences asked (none:
//!   [`API_AUDIENCE`]), valid for `expirationSeconds` (at least 600, default 3600); all these
//!   tokens are also accepted for API requests;
//! - a `TokenReview` is authenticated when the token is known, not expired, and for one of
//!   the audiences asked (none asked: [`API_AUDIENCE`]); `status.audiences` are those;
//! - a `SubjectAccessReview` is allowed for `system:masters`, and otherwise as the rule set
//!   with [`ApiServer::set_authorizer`](crate::testing::ApiServer::set_authorizer) says (none:
//!   denied), with no RBAC objects consulted;
//! - a caller without credentials is `system:anonymous` in `system:unauthenticated`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::answers::{write_status, Outcome};
use super::db::Db;
use super::http::{self, Request};
use super::peer::Peer;
use super::store::{rfc3339_in, TypeKey};
use crate::api::{
    ApiResource, Status, SubjectAccessReview, SubjectAccessReviewSpec, TokenRequest, TokenReview,
    UserInfo,
};

/// The audience of tokens meant for the API server itself (kube-apiserver's default,
/// `--api-audiences` unset, is its issuer, usually this).
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// A rule for `SubjectAccessReview`s of users outside `system:masters`.
pub(crate) type Authorizer = Arc<dyn Fn(&SubjectAccessReviewSpec) -> bool + Send + Sync>;

/// The tokens the server knows and its authorisation rule.
#[derive(Default)]
pub(crate) struct Identities {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    tokens: HashMap<String, Known>,
    next: u64,
    authorizer: Option<Authorizer>,
}

struct Known {
    user: UserInfo,
    audiences: Vec<String>,
    expires: Option<Instant>,
}

fn admin() -> UserInfo {
    UserInfo {
        username: "kube-admin".into(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
        ..Default::default()
    }
}

fn anonymous() -> UserInfo {
    UserInfo {
        username: "system:anonymous".into(),
        groups: vec!["system:unauthenticated".into()],
        ..Default::default()
    }
}

impl Identities {
    pub(crate) fn new(admin_tokens: &[String], user_tokens: &[(String, UserInfo)]) -> Self {
        let ids = Identities::default();
        {
            let mut s = ids.state.lock();
            for t in admin_tokens {
                s.tokens.insert(t.clone(), Known::forever(admin()));
            }
            for (t, u) in user_tokens {
                s.tokens.insert(t.clone(), Known::forever(u.clone()));
            }
        }
        ids
    }

    /// Whether `token` is one the server accepts for API requests now.
    pub(crate) fn accepts(&self, token: &str) -> bool {
        self.state
            .lock()
            .tokens
            .get(token)
            .is_some_and(|k| !k.expired())
    }

    pub(crate) fn set_authorizer(&self, rule: Authorizer) {
        self.state.lock().authorizer = Some(rule);
    }

    /// A new token of a service account; (token, expiry as RFC 3339).
    pub(crate) fn issue(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        audiences: &[String],
        seconds: i64,
    ) -> (String, String) {
        let mut s = self.state.lock();
        s.next += 1;
        use std::hash::BuildHasher as _;
        let random = std::collections::hash_map::RandomState::new().hash_one(s.next);
        let token = format!("kit-sa.{namespace}.{name}.{}.{random:016x}", s.next);
        let user = UserInfo {
            username: format!("system:serviceaccount:{namespace}:{name}"),
            uid: uid.into(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
            ..Default::default()
        };
        let audiences = if audiences.is_empty() {
            vec![API_AUDIENCE.to_string()]
        } else {
            audiences.to_vec()
        };
        s.tokens.insert(
            token.clone(),
            Known {
                user,
                audiences,
                expires: Some(Instant::now() + Duration::from_secs(seconds.max(0) as u64)),
            },
        );
        (token, rfc3339_in(seconds))
    }

    fn review(&self, review: &mut TokenReview) {
        let asked = if review.spec.audiences.is_empty() {
            vec![API_AUDIENCE.to_string()]
        } else {
            review.spec.audiences.clone()
        };
        let s = self.state.lock();
        let status = &mut review.status;
        match s.tokens.get(&review.spec.token) {
            None => status.error = "invalid bearer token".into(),
            Some(k) if k.expired() => status.error = "token has expired".into(),
            Some(k) => {
                let common: Vec<String> = asked
                    .iter()
                    .filter(|a| k.audiences.contains(a))
                    .cloned()
                    .collect();
                if common.is_empty() {
                    status.error = "token audiences do not match the audiences asked".into();
                } else {
                    status.authenticated = true;
                    status.user = k.user.clone();
                    status.audiences = common;
                }
            }
        }
    }

    fn authorize(&self, review: &mut SubjectAccessReview) {
        if review.spec.groups.iter().any(|g| g == "system:masters") {
            review.status.allowed = true;
            review.status.reason = "system:masters".into();
            return;
        }
        let rule = self.state.lock().authorizer.clone();
        review.status.allowed = rule.is_some_and(|r| r(&review.spec));
        if !review.status.allowed {
            review.status.reason = "no rule allows it (testing server)".into();
        }
    }

    /// Who made an API request, as admission's `userInfo` names them: a known token's user;
    /// without credentials, the admin (the server accepted the request, so it is open or
    /// the client presented its certificate).
    pub(crate) fn requester(&self, req: &Request) -> UserInfo {
        if req.header("authorization").is_none() {
            return admin();
        }
        self.who(req, false)
    }

    fn who(&self, req: &Request, client_cert: bool) -> UserInfo {
        if client_cert {
            return admin();
        }
        let token = req
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim);
        match token.and_then(|t| {
            let s = self.state.lock();
            s.tokens
                .get(t)
                .filter(|k| !k.expired())
                .map(|k| k.user.clone())
        }) {
            Some(u) => u,
            // A token the server accepted without knowing it, or basic auth: the admin.
            None if req.header("authorization").is_some() => admin(),
            None => anonymous(),
        }
    }
}

impl Known {
    fn forever(user: UserInfo) -> Self {
        Known {
            user,
            audiences: vec![API_AUDIENCE.to_string()],
            expires: None,
        }
    }

    fn expired(&self) -> bool {
        self.expires.is_some_and(|e| Instant::now() >= e)
    }
}

fn answer<S: Peer>(peer: &mut S, value: &Value) -> Outcome {
    let body = value.to_string();
    match http::write_response(peer, 201, &[], body.as_bytes()) {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    }
}

fn bad_request<S: Peer>(peer: &mut S, why: String) -> Outcome {
    let st = Status::failure(400, "BadRequest", why);
    match write_status(peer, &st, &[]) {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    }
}

fn decode<T: serde::de::DeserializeOwned>(req: &Request, kind: &str) -> Result<T, String> {
    serde_json::from_slice(&req.body).map_err(|e| format!("the body is not a valid {kind}: {e}"))
}

fn with_meta(mut v: Value) -> Value {
    v["metadata"] = json!({"creationTimestamp": rfc3339_in(0)});
    v
}

/// Answers the review and token-request paths; `None` for any other request.
pub(crate) fn handle<S: Peer>(
    req: &Request,
    peer: &mut S,
    db: &Db,
    ids: &Identities,
) -> Option<Outcome> {
    if req.method != "POST" {
        return None;
    }
    match req.path.as_str() {
        "/apis/authentication.k8s.io/v1/tokenreviews" => {
            Some(match decode::<TokenReview>(req, "TokenReview") {
                Ok(mut review) => {
                    review.status = Default::default();
                    ids.review(&mut review);
                    answer(peer, &with_meta(serde_json::to_value(&review).ok()?))
                }
                Err(why) => bad_request(peer, why),
            })
        }
        "/apis/authorization.k8s.io/v1/subjectaccessreviews" => {
            Some(match decode::<SubjectAccessReview>(req, "SubjectAccessReview") {
                Ok(review) if review.spec.user.is_empty() && review.spec.groups.is_empty() => {
                    bad_request(
                        peer,
                        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified".into(),
                    )
                }
                Ok(mut review) => {
                    review.status = Default::default();
                    ids.authorize(&mut review);
                    answer(peer, &with_meta(serde_json::to_value(&review).ok()?))
                }
                Err(why) => bad_request(peer, why),
            })
        }
        "/apis/authentication.k8s.io/v1/selfsubjectreviews" => {
            let user = ids.who(req, peer.has_client_certificate());
            Some(answer(
                peer,
                &with_meta(json!({
                    "kind": "SelfSubjectReview",
                    "apiVersion": "authentication.k8s.io/v1",
                    "status": {"userInfo": user},
                })),
            ))
        }
        path => {
            let rest = path.strip_prefix("/api/v1/namespaces/")?;
            let (namespace, rest) = rest.split_once('/')?;
            let name = rest
                .strip_prefix("serviceaccounts/")?
                .strip_suffix("/token")?;
            if name.contains('/') {
                return None;
            }
            Some(token_request(req, peer, db, ids, namespace, name))
        }
    }
}

fn token_request<S: Peer>(
    req: &Request,
    peer: &mut S,
    db: &Db,
    ids: &Identities,
    namespace: &str,
    name: &str,
) -> Outcome {
    let mut request = match decode::<TokenRequest>(req, "TokenRequest") {
        Ok(r) => r,
        Err(why) => return bad_request(peer, why),
    };
    let seconds = request.spec.expiration_seconds.unwrap_or(3600);
    if seconds < 600 {
        return bad_request(
            peer,
            format!("TokenRequest.authentication.k8s.io \"{name}\" is invalid: spec.expirationSeconds: Invalid value: {seconds}: may not specify a duration less than 10 minutes"),
        );
    }
    let sa = ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true);
    let uid = {
        let mut store = db.store.lock();
        match store.get(&TypeKey::of(&sa), Some(namespace), name) {
            Ok(stored) => serde_json::from_str::<Value>(&stored.json)
                .ok()
                .and_then(|v| v["metadata"]["uid"].as_str().map(str::to_string))
                .unwrap_or_default(),
            Err(st) => {
                return match write_status(peer, &st, &[]) {
                    Ok(()) => Outcome::KeepAlive,
                    Err(_) => Outcome::Close,
                }
            }
        }
    };
    let (token, expires) = ids.issue(namespace, name, &uid, &request.spec.audiences, seconds);
    if request.spec.audiences.is_empty() {
        request.spec.audiences = vec![API_AUDIENCE.to_string()];
    }
    request.spec.expiration_seconds = Some(seconds);
    request.status.token = token;
    request.status.expiration_timestamp = expires;
    let mut v = match serde_json::to_value(&request) {
        Ok(v) => v,
        Err(e) => return bad_request(peer, e.to_string()),
    };
    v["kind"] = "TokenRequest".into();
    v["apiVersion"] = "authentication.k8s.io/v1".into();
    v["metadata"] =
        json!({"name": name, "namespace": namespace, "creationTimestamp": rfc3339_in(0)});
    answer(peer, &v)
}
