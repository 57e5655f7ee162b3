//! Kubeconfig `auth-provider` blocks: kubectl's built-in authentication providers.
//!
//! - `oidc` is supported: see [`OidcProvider`].
//! - `gcp` and `azure` were removed from client-go in Kubernetes 1.26; their replacements
//!   are exec credential plugins (`gke-gcloud-auth-plugin`, `kubelogin`), which this crate
//!   runs like any other `exec` user. A user naming them gets an error saying so.
//! - Any other name is an error too.
//!
//! When the error comes: loading the kubeconfig succeeds (the configuration holds an
//! [`UnsupportedAuthProvider`]), so a program can still read the file, list its contexts or
//! load another context; building a client for that user fails
//! ([`Config::client`](super::Config::client) and [`Client::new`](crate::client::Client::new)
//! call [`AuthProvider::check`]), as client-go fails when building the transport. Should
//! the provider be asked for a credential anyway, that fails too: no request is ever sent
//! without the credential the kubeconfig asked for.

use std::path::Path;
use std::sync::Arc;

use super::kubeconfig::AuthProviderConfig;
use super::oidc::OidcProvider;
use crate::client::{AuthProvider, Secret};
use crate::error::{Error, Result};

/// The credential source for an `auth-provider` block of user `user_name`, read from
/// `source` (where refreshed tokens are written back); `what` names the user in errors.
/// A provider that cannot work becomes an [`UnsupportedAuthProvider`] carrying the reason.
pub(crate) fn build(
    config: &AuthProviderConfig,
    user_name: &str,
    source: Option<&Path>,
    what: &str,
) -> Arc<dyn AuthProvider> {
    let unsupported = |reason: String| -> Arc<dyn AuthProvider> {
        Arc::new(UnsupportedAuthProvider {
            name: config.name.clone(),
            message: format!("{what}: {reason}"),
        })
    };
    match config.name.as_str() {
        "oidc" => match OidcProvider::from_config(&config.config, user_name, source, what) {
            Ok(p) => Arc::new(p),
            Err(e) => unsupported(e),
        },
        "gcp" => unsupported(
            "auth-provider \"gcp\" was removed from kubectl and client-go (Kubernetes 1.26); use the exec credential plugin gke-gcloud-auth-plugin instead (`gcloud components install gke-gcloud-auth-plugin`, then `gcloud container clusters get-credentials` rewrites this user)".into(),
        ),
        "azure" => unsupported(
            "auth-provider \"azure\" was removed from kubectl and client-go (Kubernetes 1.26); use the exec credential plugin kubelogin instead (https://github.com/Azure/kubelogin; `kubelogin convert-kubeconfig` rewrites this user)".into(),
        ),
        "" => unsupported("auth-provider has no name".into()),
        other => unsupported(format!(
            "unknown auth-provider {other:?} (kube-informer supports \"oidc\"; other credentials come from exec plugins)"
        )),
    }
}

/// An `auth-provider` that cannot produce credentials (`gcp`, `azure`, an unknown name, an
/// `oidc` block missing what it needs). It fails [`AuthProvider::check`], so no client is
/// built with it, and every request it is asked to authenticate fails without being sent.
#[derive(Debug)]
pub struct UnsupportedAuthProvider {
    name: String,
    message: String,
}

impl UnsupportedAuthProvider {
    /// The provider's name in the kubeconfig.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl AuthProvider for UnsupportedAuthProvider {
    fn authorization(&self) -> Result<Option<Secret>> {
        Err(Error::Config(self.message.clone()))
    }

    fn check(&self) -> Result<()> {
        Err(Error::Config(self.message.clone()))
    }
}
