//! The crate's one error type.
//!
//! Every error says which request (method and path, never a credential) or which input failed,
//! and what was wrong — without quoting what the server sent, which may be object data (a
//! Secret's): a body or watch line that does not decode is described by its length and the
//! position and kind of the JSON error, an error body that is not a `Status` by its length
//! and content type. A real `Status` is kept whole (its `message` is the server's, written
//! for people). API failures keep the decoded [`Status`] so callers can branch on
//! `code`/`reason` (410 means relist, 409 means conflict, ...).

use std::fmt;

use crate::api::Status;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The API server answered a request with a failure status (or sent a watch ERROR event).
    Api {
        /// The request, e.g. `GET /api/v1/namespaces/lab/pods?limit=500`.
        request: String,
        /// The decoded Status (synthesised from the HTTP status when the body was not one).
        status: Box<Status>,
    },
    /// The request did not get an answer: connection refused or dropped, TLS, timeout.
    Transport {
        /// The request.
        request: String,
        /// What the HTTP stack said.
        source: ureq::Error,
    },
    /// Reading the response body failed part way.
    Io {
        /// The request.
        request: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A response body (or part of one) was not what was expected.
    Decode {
        /// The request.
        request: String,
        /// What was being decoded and why it failed.
        message: String,
    },
    /// One line of a watch stream could not be used (garbage, truncated, unknown type).
    WatchLine {
        /// The watch request.
        request: String,
        /// 1-based line number within the response.
        line: u64,
        /// What was wrong with it.
        message: String,
    },
    /// Bad configuration: a missing server, an unreadable certificate, ...
    Config(String),
    /// A bad argument: an invalid selector, name or parameter.
    InvalidInput(String),
    /// A pod request failed on a choice the caller has to make (which container, a pod not
    /// yet scheduled, an eviction a PodDisruptionBudget refuses for now): see
    /// [`PodError`](crate::pod::PodError).
    Pod {
        /// The request.
        request: String,
        /// What to choose.
        error: crate::pod::PodError,
        /// The server's Status (`None` for a `204` with no body: a pod not scheduled).
        status: Option<Box<Status>>,
    },
    /// The request was given up because its client's [`Cancel`](crate::client::Cancel)
    /// token fired (the informer or reflector making it is stopping).
    Cancelled {
        /// The request.
        request: String,
    },
}

impl Error {
    /// The Status of an API failure.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api { status, .. } => Some(status),
            Error::Pod {
                status: Some(status),
                ..
            } => Some(status),
            _ => None,
        }
    }

    /// The [`PodError`](crate::pod::PodError) of a pod request that named a choice.
    pub fn pod_error(&self) -> Option<&crate::pod::PodError> {
        match self {
            Error::Pod { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The HTTP code of an API failure.
    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }

    /// 410 Gone / Expired: the resource version or continue token is too old; relist.
    pub fn is_gone(&self) -> bool {
        self.status().is_some_and(Status::is_gone)
    }

    /// The server cannot serve the requested resourceVersion yet: it is newer than the
    /// server's cache (kube-apiserver answers 504 `Timeout` with the cause
    /// `ResourceVersionTooLarge`, or, in older versions, the message "Too large resource
    /// version"). A reflector then lists consistently (resourceVersion ""), as client-go does.
    pub fn is_resource_version_too_large(&self) -> bool {
        let Some(st) = self.status() else {
            return false;
        };
        let cause = st.details.as_ref().is_some_and(|d| {
            d.causes
                .iter()
                .any(|c| c.reason == "ResourceVersionTooLarge")
        });
        cause || (st.reason == "Timeout" && st.message.contains("Too large resource version"))
    }

    /// True when the request was given up because its client's cancellation token fired.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Error::Cancelled { .. })
    }

    /// 404 Not Found.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// 409 Conflict (a stale resourceVersion on update, an apply conflict between field
    /// managers, a failed delete precondition, or AlreadyExists on create: see
    /// [`is_already_exists`](Self::is_already_exists)).
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }

    /// 409 AlreadyExists: a create of a name that is taken.
    pub fn is_already_exists(&self) -> bool {
        self.status()
            .is_some_and(|s| s.code == 409 && s.reason == "AlreadyExists")
    }

    /// 422 Invalid: the object failed validation (`details.causes` lists the fields), or a
    /// JSON patch's `test` failed.
    pub fn is_invalid(&self) -> bool {
        self.status()
            .is_some_and(|s| s.code == 422 || s.reason == "Invalid")
    }

    /// 400 Bad Request (a malformed patch, a name mismatch, `fieldValidation=Strict`
    /// refusing unknown fields).
    pub fn is_bad_request(&self) -> bool {
        self.code() == Some(400)
    }

    /// 415 Unsupported Media Type: a patch kind the resource does not accept (strategic
    /// merge on a custom resource).
    pub fn is_unsupported_media_type(&self) -> bool {
        self.code() == Some(415)
    }

    /// Worth retrying later with back-off: transport failures, truncated bodies, 429 and 5xx.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Transport { .. } | Error::Io { .. } => true,
            Error::Api { status, .. } => status.code == 429 || status.code >= 500,
            Error::Pod { error, .. } => {
                matches!(error, crate::pod::PodError::DisruptionBudget { .. })
            }
            _ => false,
        }
    }
}

/// What went wrong decoding JSON, without quoting the JSON: the error's kind and position
/// (serde's messages can quote values, and a value may be a Secret's data). A "missing
/// field" message names only a field of our own schema, so it is kept.
pub(crate) fn json_error_summary(e: &serde_json::Error) -> String {
    let kind = match e.classify() {
        serde_json::error::Category::Io => "read error",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "unexpected data",
        serde_json::error::Category::Eof => "unexpected end of input",
    };
    let text = e.to_string();
    let detail = match text.strip_prefix("missing field `") {
        Some(rest) => match rest.split_once('`') {
            Some((field, _)) if field.len() <= 64 => format!(" (missing field `{field}`)"),
            _ => String::new(),
        },
        None => String::new(),
    };
    if e.line() == 0 {
        // The fast scanner's errors end with their position instead.
        let at = text
            .rsplit_once(" at byte ")
            .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(|(_, n)| format!(" at byte {n}"))
            .unwrap_or_default();
        format!("JSON {kind}{detail}{at}")
    } else {
        format!(
            "JSON {kind}{detail} at line {} column {}",
            e.line(),
            e.column()
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api { request, status } => {
                write!(f, "{request}: {} ", status.code)?;
                if !status.reason.is_empty() {
                    write!(f, "{}", status.reason)?;
                }
                if !status.message.is_empty() {
                    write!(f, ": {}", status.message)?;
                }
                Ok(())
            }
            Error::Transport { request, source } => write!(f, "{request}: {source}"),
            Error::Io { request, source } => write!(f, "{request}: reading the body: {source}"),
            Error::Decode { request, message } => write!(f, "{request}: {message}"),
            Error::WatchLine {
                request,
                line,
                message,
            } => write!(f, "{request}: watch line {line}: {message}"),
            Error::Config(m) => write!(f, "configuration: {m}"),
            Error::InvalidInput(m) => write!(f, "invalid input: {m}"),
            Error::Pod { request, error, .. } => write!(f, "{request}: {error}"),
            Error::Cancelled { request } => write!(f, "{request}: cancelled"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Transport { source, .. } => Some(source),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
