//! Who is calling and may they: `TokenReview`, `SubjectAccessReview`, `SelfSubjectReview`
//! and `TokenRequest`, as typed values.
//!
//! These are the objects a server uses to authenticate and authorise its own callers through
//! kube-apiserver (what controller-runtime's secure metrics and every aggregated API server
//! do), and a program uses to learn who it is or to mint short-lived service-account tokens.
//! None is stored: each is `create`d and the answer's `status` is the result. The calls are
//! [`Client::token_review`](crate::Client::token_review),
//! [`subject_access_review`](crate::Client::subject_access_review),
//! [`self_subject_review`](crate::Client::self_subject_review) and
//! [`request_token`](crate::Client::request_token).
//!
//! Tokens (a review's `spec.token`, a token request's `status.token`) never show in `Debug`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

fn redacted(token: &str) -> &'static str {
    if token.is_empty() {
        ""
    } else {
        "<redacted>"
    }
}

/// A user as kube-apiserver knows them (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    /// The name, e.g. `system:serviceaccount:lab:metrics-reader`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// A unique id, when the authenticator gives one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The groups, e.g. `system:authenticated`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Whatever else the authenticator says (e.g. the service account's pod).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// `TokenReview.spec`: the token to check and the audiences it should be for.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenReviewSpec {
    /// The bearer token.
    #[serde(default)]
    pub token: String,
    /// Audiences the token must be for (at least one); empty: kube-apiserver's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
}

impl std::fmt::Debug for TokenReviewSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenReviewSpec")
            .field("token", &redacted(&self.token))
            .field("audiences", &self.audiences)
            .finish()
    }
}

/// `TokenReview.status`: whether the token is valid, and whose.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenReviewStatus {
    /// True when the token is valid (and for one of the audiences asked).
    #[serde(default)]
    pub authenticated: bool,
    /// Whose token it is.
    #[serde(default)]
    pub user: UserInfo,
    /// The audiences, of those asked, the token is for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    /// Why it is not valid, when the authenticator says.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// `authentication.k8s.io/v1` `TokenReview`: is this bearer token valid, and whose is it.
///
/// ```
/// use kube_informer::api::TokenReview;
///
/// let review = TokenReview::new("a-token", &["https://kubernetes.default.svc"]);
/// assert!(!format!("{review:?}").contains("a-token"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenReview {
    /// `authentication.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `TokenReview`.
    #[serde(default)]
    pub kind: String,
    /// What to check.
    #[serde(default)]
    pub spec: TokenReviewSpec,
    /// The answer (empty in a request).
    #[serde(default)]
    pub status: TokenReviewStatus,
}

impl TokenReview {
    /// A review of `token` for `audiences` (none: kube-apiserver's own audience).
    pub fn new(token: &str, audiences: &[&str]) -> Self {
        TokenReview {
            api_version: "authentication.k8s.io/v1".into(),
            kind: "TokenReview".into(),
            spec: TokenReviewSpec {
                token: token.into(),
                audiences: audiences.iter().map(|a| a.to_string()).collect(),
            },
            status: TokenReviewStatus::default(),
        }
    }
}

/// `SubjectAccessReview.spec.resourceAttributes`: an action on an API resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAttributes {
    /// The namespace (empty: cluster-scoped or all namespaces).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, ... or `*`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub verb: String,
    /// The API group (empty: core).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The resource, e.g. `pods`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The subresource, e.g. `log`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subresource: String,
    /// The object's name (empty: any).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `SubjectAccessReview.spec.nonResourceAttributes`: a request for a path outside the
/// resource API, e.g. `get` of `/metrics`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NonResourceAttributes {
    /// The URL path, e.g. `/metrics`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The verb: the HTTP method in lower case (`get`, `post`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub verb: String,
}

/// `SubjectAccessReview.spec`: who, and which action.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubjectAccessReviewSpec {
    /// An action on a resource (set this or `non_resource_attributes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_attributes: Option<ResourceAttributes>,
    /// An action on a non-resource path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub non_resource_attributes: Option<NonResourceAttributes>,
    /// The user's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// The user's groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The user's extra attributes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
    /// The user's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

impl SubjectAccessReviewSpec {
    /// May `user` do `verb` on the non-resource `path`?
    pub fn non_resource(user: &UserInfo, verb: &str, path: &str) -> Self {
        SubjectAccessReviewSpec {
            non_resource_attributes: Some(NonResourceAttributes {
                path: path.into(),
                verb: verb.into(),
            }),
            user: user.username.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
            uid: user.uid.clone(),
            ..Default::default()
        }
    }
}

/// `SubjectAccessReview.status`: the verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubjectAccessReviewStatus {
    /// True when allowed.
    #[serde(default)]
    pub allowed: bool,
    /// True when explicitly denied (`allowed` is false then too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
    /// Why, when the authoriser says.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Set when the authoriser failed to decide.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub evaluation_error: String,
}

/// `authorization.k8s.io/v1` `SubjectAccessReview`: may this user do this.
///
/// ```
/// use kube_informer::api::{SubjectAccessReview, SubjectAccessReviewSpec, UserInfo};
///
/// let user = UserInfo { username: "prometheus".into(), ..Default::default() };
/// let review = SubjectAccessReview::new(SubjectAccessReviewSpec::non_resource(&user, "get", "/metrics"));
/// assert_eq!(serde_json::to_value(&review).unwrap()["spec"]["nonResourceAttributes"]["path"], "/metrics");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubjectAccessReview {
    /// `authorization.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `SubjectAccessReview`.
    #[serde(default)]
    pub kind: String,
    /// The question.
    #[serde(default)]
    pub spec: SubjectAccessReviewSpec,
    /// The answer (empty in a request).
    #[serde(default)]
    pub status: SubjectAccessReviewStatus,
}

impl SubjectAccessReview {
    /// A review of `spec`.
    pub fn new(spec: SubjectAccessReviewSpec) -> Self {
        SubjectAccessReview {
            api_version: "authorization.k8s.io/v1".into(),
            kind: "SubjectAccessReview".into(),
            spec,
            status: SubjectAccessReviewStatus::default(),
        }
    }
}

/// `SelfSubjectReview.status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelfSubjectReviewStatus {
    /// Who the server thinks the caller is.
    #[serde(default)]
    pub user_info: UserInfo,
}

/// `authentication.k8s.io/v1` `SelfSubjectReview`: who am I (`kubectl auth whoami`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelfSubjectReview {
    /// `authentication.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `SelfSubjectReview`.
    #[serde(default)]
    pub kind: String,
    /// The answer.
    #[serde(default)]
    pub status: SelfSubjectReviewStatus,
}

/// The object a token is bound to (`TokenRequest.spec.boundObjectRef`): the token stops
/// being valid when that object is deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundObjectReference {
    /// `Pod`, `Secret` or `Node`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// `TokenRequest.spec`: the token's audiences and lifetime.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRequestSpec {
    /// Who the token is for (empty: kube-apiserver's own audience).
    #[serde(default)]
    pub audiences: Vec<String>,
    /// Its lifetime in seconds (kube-apiserver's minimum is 600; default one hour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_seconds: Option<i64>,
    /// An object the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_object_ref: Option<BoundObjectReference>,
}

/// `TokenRequest.status`: the token. `Debug` does not show it.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRequestStatus {
    /// The bearer token.
    #[serde(default)]
    pub token: String,
    /// When it expires (RFC 3339).
    #[serde(default)]
    pub expiration_timestamp: String,
}

impl std::fmt::Debug for TokenRequestStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRequestStatus")
            .field("token", &redacted(&self.token))
            .field("expiration_timestamp", &self.expiration_timestamp)
            .finish()
    }
}

/// `authentication.k8s.io/v1` `TokenRequest`: a short-lived token of a service account
/// (the `token` subresource of `serviceaccounts`).
///
/// ```
/// use kube_informer::api::TokenRequest;
///
/// let request = TokenRequest::new(&["metrics"], Some(600));
/// assert_eq!(serde_json::to_value(&request).unwrap()["spec"]["expirationSeconds"], 600);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRequest {
    /// `authentication.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `TokenRequest`.
    #[serde(default)]
    pub kind: String,
    /// What token.
    #[serde(default)]
    pub spec: TokenRequestSpec,
    /// The token (empty in a request).
    #[serde(default)]
    pub status: TokenRequestStatus,
}

impl TokenRequest {
    /// A request for a token for `audiences`, valid `expiration_seconds` (None: the
    /// server's default, one hour).
    pub fn new(audiences: &[&str], expiration_seconds: Option<i64>) -> Self {
        TokenRequest {
            api_version: "authentication.k8s.io/v1".into(),
            kind: "TokenRequest".into(),
            spec: TokenRequestSpec {
                audiences: audiences.iter().map(|a| a.to_string()).collect(),
                expiration_seconds,
                bound_object_ref: None,
            },
            status: TokenRequestStatus::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_self_subject_review_decodes() {
        let captured = r#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":"2026-11-22T02:05:02Z"},"status":{"userInfo":{"username":"lab-admin","uid":"uid-lab-admin","groups":["system:masters","system:authenticated"]}}}"#;
        let r: SelfSubjectReview = serde_json::from_str(captured).unwrap();
        assert_eq!(r.status.user_info.username, "lab-admin");
        assert_eq!(r.status.user_info.groups[0], "system:masters");
    }

    #[test]
    fn tokens_never_show_in_debug() {
        let mut t = TokenRequest::new(&[], None);
        t.status.token = "sekret".into();
        assert!(!format!("{t:?}").contains("sekret"));
        assert!(!format!("{:?}", TokenReview::new("sekret", &[])).contains("sekret"));
    }
}
