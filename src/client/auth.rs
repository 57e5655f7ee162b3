//! Credentials for requests, and the `Secret` wrapper that keeps them out of logs.
//!
//! Static credentials (a bearer token, basic auth) are enough for most clusters; anything that
//! changes over time (token files, exec plugins) implements [`AuthProvider`], which the client
//! asks before every request and tells when the server answered 401.

use std::fmt;
use std::sync::Arc;

use crate::error::Result;

/// A credential string. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself; use only to put it on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret::new(s)
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret(s)
    }
}

/// A source of `Authorization` header values that may change over time.
pub trait AuthProvider: Send + Sync + fmt::Debug {
    /// The full `Authorization` header value (e.g. `Bearer ...`), or `None` for no header.
    fn authorization(&self) -> Result<Option<Secret>>;

    /// The server rejected the last value (HTTP 401): drop any cached credential. The request is
    /// then tried once more with a fresh [`authorization`](Self::authorization).
    fn invalidate(&self) {}

    /// A TLS client certificate this source provides (exec plugins may return one), with a
    /// generation number that changes whenever the certificate does. The client rebuilds its
    /// TLS configuration when the generation changes.
    fn client_identity(&self) -> Result<Option<(u64, crate::client::Identity)>> {
        Ok(None)
    }

    /// Brings the credential up to date now if it needs it, giving up (with any error) once
    /// `cancel` fires. A client with a cancellation token calls this before a request, so
    /// the work that can take long (running a plugin) honours the token; the calls above
    /// then find the credential ready. The default does nothing.
    fn prepare(&self, cancel: &crate::client::Cancel) -> Result<()> {
        let _ = cancel;
        Ok(())
    }

    /// Whether this source can ever produce a credential: an error says why not (a
    /// kubeconfig `auth-provider` that kubectl removed, say). [`Client::new`] refuses a
    /// source that fails this, so such a client is never built and never sends a request.
    /// The default accepts.
    ///
    /// [`Client::new`]: crate::client::Client::new
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// How requests authenticate (besides a TLS client certificate).
#[derive(Clone, Debug, Default)]
pub enum Auth {
    /// No `Authorization` header.
    #[default]
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(Secret),
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
    },
    /// A changing credential (token file, exec plugin, ...).
    Provider(Arc<dyn AuthProvider>),
}

impl Auth {
    pub(crate) fn header(&self) -> Result<Option<Secret>> {
        use base64::Engine as _;
        Ok(match self {
            Auth::None => None,
            Auth::Bearer(t) => Some(Secret(format!("Bearer {}", t.expose()))),
            Auth::Basic { username, password } => {
                let raw = format!("{username}:{}", password.expose());
                let enc = base64::engine::general_purpose::STANDARD.encode(raw);
                Some(Secret(format!("Basic {enc}")))
            }
            Auth::Provider(p) => p.authorization()?,
        })
    }

    pub(crate) fn invalidate(&self) -> bool {
        match self {
            Auth::Provider(p) => {
                p.invalidate();
                true
            }
            _ => false,
        }
    }
}
