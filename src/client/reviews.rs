//! Asking kube-apiserver who a caller is and what they may do, and for service-account
//! tokens: `create` calls of the review objects in [`api`](crate::api) (`reviews.rs`), each
//! answered with the object and its `status` filled in.

use super::Client;
use crate::api::{
    SelfSubjectReview, SubjectAccessReview, SubjectAccessReviewSpec, TokenRequest, TokenReview,
    UserInfo,
};
use crate::client::Method;
use crate::error::{Error, Result};

fn body<T: serde::Serialize>(what: &str, value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|e| Error::Decode {
        request: what.to_string(),
        message: format!("encoding the request: {e}"),
    })
}

impl Client {
    /// Checks a bearer token (`POST /apis/authentication.k8s.io/v1/tokenreviews`): the
    /// answer's `status` says whether it is valid, for which of `audiences` (none:
    /// kube-apiserver's own) and whose it is. The caller needs `create` on `tokenreviews`
    /// (the `system:auth-delegator` ClusterRole).
    ///
    /// ```
    /// # use kube_informer::{testing::ApiServer, Client};
    /// # let server = ApiServer::start();
    /// # let client = Client::new(server.client_config())?;
    /// let token = server.issue_token("lab", "metrics-reader", &[]);
    /// let review = client.token_review(&token, &[])?;
    /// assert!(review.status.authenticated);
    /// assert_eq!(review.status.user.username, "system:serviceaccount:lab:metrics-reader");
    /// assert!(!client.token_review("made-up", &[])?.status.authenticated);
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn token_review(&self, token: &str, audiences: &[&str]) -> Result<TokenReview> {
        let review = TokenReview::new(token, audiences);
        let path = "/apis/authentication.k8s.io/v1/tokenreviews";
        self.request_json(Method::POST, path, Some(&body(path, &review)?))
    }

    /// Asks whether a user may do something (`POST
    /// /apis/authorization.k8s.io/v1/subjectaccessreviews`). The caller needs `create` on
    /// `subjectaccessreviews` (the `system:auth-delegator` ClusterRole).
    ///
    /// ```
    /// # use kube_informer::{testing::ApiServer, Client};
    /// use kube_informer::api::{SubjectAccessReviewSpec, UserInfo};
    /// # let server = ApiServer::start();
    /// # let client = Client::new(server.client_config())?;
    /// let admin = UserInfo { username: "root".into(), groups: vec!["system:masters".into()], ..Default::default() };
    /// let spec = SubjectAccessReviewSpec::non_resource(&admin, "get", "/metrics");
    /// assert!(client.subject_access_review(spec)?.status.allowed);
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn subject_access_review(
        &self,
        spec: SubjectAccessReviewSpec,
    ) -> Result<SubjectAccessReview> {
        let review = SubjectAccessReview::new(spec);
        let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
        self.request_json(Method::POST, path, Some(&body(path, &review)?))
    }

    /// Who the server thinks this client is (`POST
    /// /apis/authentication.k8s.io/v1/selfsubjectreviews`, `kubectl auth whoami`).
    ///
    /// ```
    /// # use kube_informer::{testing::ApiServer, Client};
    /// # let server = ApiServer::builder().token("t0ken").start();
    /// # let client = Client::new(server.client_config())?;
    /// let me = client.self_subject_review()?;
    /// assert!(me.groups.contains(&"system:authenticated".to_string()));
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn self_subject_review(&self) -> Result<UserInfo> {
        let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
        let request = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview",
        });
        let review: SelfSubjectReview = self.request_json(Method::POST, path, Some(&request))?;
        Ok(review.status.user_info)
    }

    /// A token of the service account `namespace/name` (`POST
    /// /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token`), for the audiences and
    /// lifetime of `request`; the token is in the answer's `status` (never in `Debug`).
    ///
    /// ```
    /// # use kube_informer::{testing::ApiServer, Client};
    /// use kube_informer::api::TokenRequest;
    /// # let server = ApiServer::start();
    /// # let client = Client::new(server.client_config())?;
    /// # let sa = kube_informer::api::ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true);
    /// # server.create(&sa, serde_json::json!({"metadata": {"name": "builder", "namespace": "lab"}})).unwrap();
    /// let issued = client.request_token("lab", "builder", &TokenRequest::new(&["vault"], Some(600)))?;
    /// let review = client.token_review(&issued.status.token, &["vault"])?;
    /// assert!(review.status.authenticated);
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn request_token(
        &self,
        namespace: &str,
        name: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest> {
        let mut path = String::from("/api/v1/namespaces/");
        crate::api::url_encoding::path_segment(namespace, &mut path);
        path.push_str("/serviceaccounts/");
        crate::api::url_encoding::path_segment(name, &mut path);
        path.push_str("/token");
        let mut request = request.clone();
        if request.api_version.is_empty() {
            request.api_version = "authentication.k8s.io/v1".into();
            request.kind = "TokenRequest".into();
        }
        self.request_json(Method::POST, &path, Some(&body(&path, &request)?))
    }
}
