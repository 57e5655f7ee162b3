//! A bearer token read from a file and re-read when the file changes: service-account tokens
//! are rotated by the kubelet, and `tokenFile` users expect the same.

use std::path::PathBuf;
use std::time::SystemTime;

use parking_lot::Mutex;

use crate::client::{AuthProvider, Secret};
use crate::error::{Error, Result};

/// `Authorization: Bearer <contents of the file>`, refreshed when the file's modification
/// time or size changes, or after the server rejected the token.
///
/// A file that cannot be read (or is empty) after a good read leaves the last token in use
/// (client-go's caching token source); after a 401 ([`invalidate`](AuthProvider::invalidate))
/// the file is read afresh. Beside an inline `token` (a kubeconfig user with both), the
/// file's token is sent while there is one, the inline token otherwise: client-go's order.
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
    cached: Mutex<Option<(Option<SystemTime>, u64, Secret)>>,
    fallback: Option<Secret>,
}

impl TokenFile {
    /// A provider for the token in `path` (read on first use).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TokenFile {
            path: path.into(),
            cached: Mutex::new(None),
            fallback: None,
        }
    }

    /// The token in `path`, or `token` when the file cannot be read or is empty: a
    /// kubeconfig user with both `token` and `tokenFile`, as client-go reads it.
    pub(crate) fn with_fallback(path: impl Into<PathBuf>, token: Secret) -> Self {
        TokenFile {
            fallback: Some(token),
            ..TokenFile::new(path)
        }
    }

    fn read(&self) -> Result<Secret> {
        let text = std::fs::read_to_string(&self.path).map_err(|e| {
            Error::Config(format!(
                "token file {}: cannot read: {e}",
                self.path.display()
            ))
        })?;
        let token = text.trim();
        if token.is_empty() {
            return Err(Error::Config(format!(
                "token file {} is empty",
                self.path.display()
            )));
        }
        Ok(Secret::new(format!("Bearer {token}")))
    }
}

impl AuthProvider for TokenFile {
    fn authorization(&self) -> Result<Option<Secret>> {
        let meta = std::fs::metadata(&self.path).ok();
        let stamp = (
            meta.as_ref().and_then(|m| m.modified().ok()),
            meta.as_ref().map_or(0, |m| m.len()),
        );
        let mut cached = self.cached.lock();
        if let Some((mtime, len, header)) = &*cached {
            if (*mtime, *len) == stamp {
                return Ok(Some(header.clone()));
            }
        }
        let header = match self.read() {
            Ok(h) => h,
            // As client-go's caching token source: a file that cannot be read now (being
            // rewritten, briefly gone) leaves the last token it held in use...
            Err(e) if cached.is_some() => {
                log::warn!("{e}; the token read before stays in use");
                return Ok(cached.as_ref().map(|(_, _, h)| h.clone()));
            }
            // ...and without one, the inline token beside it, if any.
            Err(e) => match &self.fallback {
                Some(token) => return Ok(Some(Secret::new(format!("Bearer {}", token.expose())))),
                None => return Err(e),
            },
        };
        *cached = Some((stamp.0, stamp.1, header.clone()));
        Ok(Some(header))
    }

    fn invalidate(&self) {
        self.cached.lock().take();
    }
}
