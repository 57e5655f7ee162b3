//! Server warnings: the `Warning:` response headers kube-apiserver adds to an answer.
//!
//! The API server warns about what it accepted but wants fixed: unknown fields dropped under
//! `fieldValidation=Warn` (the default), deprecated API versions, deprecated annotations. Each
//! warning is one header `Warning: 299 - "text"` (RFC 7234's format: a code, an agent, a
//! quoted text, an optional quoted date); several may come, one header each or comma
//! separated in one. Every response's warnings are parsed (malformed entries are dropped, as
//! client-go does) and:
//!
//! - surfaced on [`Response::warnings`](super::Response::warnings) to the request builder's
//!   caller;
//! - passed to the client's [`WarningHandler`] ([`ClientConfig::warning_handler`]), for
//!   every request, the typed [`Api`](super::Api) verbs included. The default,
//!   [`WarningHandler::LogOnce`], logs each distinct text once per client at `warn` level
//!   (like client-go's deduplicating warning writer); texts are the server's, written for
//!   people, never a request body; they are cut at 512 characters and their control
//!   characters replaced, so a hostile server cannot forge log lines.
//!
//! Limit: the "once per client" memory holds at most 1,000 texts; past that, new texts are
//! logged every time they come (a server sending endless distinct warnings cannot grow the
//! client's memory).
//!
//! [`ClientConfig::warning_handler`]: super::ClientConfig::warning_handler

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;
use ureq::http::HeaderMap;

/// How many distinct texts [`WarningHandler::LogOnce`] remembers per client.
const MAX_REMEMBERED: usize = 1000;

/// Longest warning text logged.
const MAX_LOGGED: usize = 512;

/// One warning from a `Warning:` response header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The warn-code; kube-apiserver always sends 299 ("miscellaneous persistent warning").
    pub code: u16,
    /// The warn-agent (`-` from kube-apiserver).
    pub agent: String,
    /// The text, unquoted: `unknown field "spec"`.
    pub text: String,
}

/// What a client does with the warnings of its responses.
///
/// The API server warns about what it accepted but wants fixed: unknown fields dropped under
/// `fieldValidation=Warn` (the default), deprecated API versions, deprecated annotations. Each
/// warning is one header `Warning: 299 - "text"` (RFC 7234's format: a code, an agent, a
/// quoted text, an optional quoted date); several may come, one header each or comma
/// separated in one. Every response's warnings are parsed (malformed entries are dropped, as
/// client-go does) and:
///
/// - surfaced on [`Response::warnings`](super::Response::warnings) to the request builder's
///   caller;
/// - passed to the client's [`WarningHandler`] ([`ClientConfig::warning_handler`]), for
///   every request, the typed [`Api`](super::Api) verbs included. The default,
///   [`WarningHandler::LogOnce`], logs each distinct text once per client at `warn` level
///   (like client-go's deduplicating warning writer); texts are the server's, written for
///   people, never a request body; they are cut at 512 characters and their control
///   characters replaced, so a hostile server cannot forge log lines.
///
/// Limit: the "once per client" memory holds at most 1,000 texts; past that, new texts are
/// logged every time they come (a server sending endless distinct warnings cannot grow the
/// client's memory).
///
/// [`ClientConfig::warning_handler`]: super::ClientConfig::warning_handler
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use kube_informer::client::{PostParams, Warning, WarningHandler};
/// use kube_informer::{api::{ApiResource, DynamicObject}, Api, Client};
/// # let server = kube_informer::testing::ApiServer::start();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let mut config = server.client_config();
/// config.warning_handler = WarningHandler::Custom(Arc::new(move |w: &Warning| {
///     sink.lock().unwrap().push(w.text.clone());
/// }));
/// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
/// let api: Api<DynamicObject> = Api::namespaced_with(Client::new(config)?, "lab", &cms);
/// // An unknown field is dropped with a warning (fieldValidation defaults to Warn).
/// api.create(&PostParams::default(), &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": {"name": "x"}, "spec": {}}))?;
/// assert_eq!(*seen.lock().unwrap(), [r#"unknown field "spec""#]);
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone, Default)]
pub enum WarningHandler {
    /// Logs each distinct text once per client, at `warn` level (the default).
    #[default]
    LogOnce,
    /// Logs every warning, at `warn` level.
    LogAll,
    /// Drops them (they stay visible on [`Response::warnings`](super::Response::warnings)).
    Ignore,
    /// Calls this for every warning of every response, on the thread that made the request.
    Custom(Arc<dyn Fn(&Warning) + Send + Sync>),
}

impl std::fmt::Debug for WarningHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WarningHandler::LogOnce => "LogOnce",
            WarningHandler::LogAll => "LogAll",
            WarningHandler::Ignore => "Ignore",
            WarningHandler::Custom(_) => "Custom(..)",
        })
    }
}

/// A client's handler and what it already logged.
pub(crate) struct WarningSink {
    handler: WarningHandler,
    seen: Mutex<HashSet<String>>,
}

impl WarningSink {
    pub(crate) fn new(handler: WarningHandler) -> Self {
        WarningSink {
            handler,
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// Hands the warnings among `headers` to the handler (`request` names the request in
    /// log lines). Costs one header lookup when there is none.
    pub(crate) fn handle(&self, request: &str, headers: &HeaderMap) {
        if matches!(self.handler, WarningHandler::Ignore) || !headers.contains_key("warning") {
            return;
        }
        for w in warnings_of(headers) {
            match &self.handler {
                WarningHandler::Ignore => {}
                WarningHandler::Custom(f) => f(&w),
                WarningHandler::LogAll => log_warning(request, &w.text),
                WarningHandler::LogOnce => {
                    let mut seen = self.seen.lock();
                    if seen.contains(&w.text) {
                        continue;
                    }
                    if seen.len() < MAX_REMEMBERED {
                        seen.insert(w.text.clone());
                    }
                    drop(seen);
                    log_warning(request, &w.text);
                }
            }
        }
    }
}

fn log_warning(request: &str, text: &str) {
    let shown: String = text
        .chars()
        .take(MAX_LOGGED)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    log::warn!("{request}: server warning: {shown}");
}

/// Every well-formed warning in the `Warning` headers of a response, in order.
pub(crate) fn warnings_of(headers: &HeaderMap) -> Vec<Warning> {
    let mut out = Vec::new();
    for value in headers.get_all("warning") {
        // Header values are bytes; a text with UTF-8 in it is kept as sent.
        if let Ok(v) = std::str::from_utf8(value.as_bytes()) {
            parse_warning_header(v, &mut out);
        }
    }
    out
}

/// Parses one header value: `code SP agent SP "text" [SP "date"]`, comma separated. Stops
/// at the first malformed entry, keeping those before it.
pub(crate) fn parse_warning_header(value: &str, out: &mut Vec<Warning>) {
    let mut rest = value.trim_start();
    while !rest.is_empty() {
        let Some((w, after)) = parse_one(rest) else {
            return;
        };
        out.push(w);
        rest = after.trim_start();
        match rest.strip_prefix(',') {
            Some(r) => rest = r.trim_start(),
            None => return,
        }
    }
}

/// One warning at the start of `s`, and what follows it.
fn parse_one(s: &str) -> Option<(Warning, &str)> {
    let code = s.get(..3)?;
    if !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let code: u16 = code.parse().ok()?;
    let s = s[3..].strip_prefix(' ')?;
    let agent_end = s.find(' ')?;
    let agent = &s[..agent_end];
    if agent.is_empty() || agent.contains('"') {
        return None;
    }
    let (text, mut rest) = quoted(s[agent_end + 1..].strip_prefix('"')?)?;
    // An optional warn-date.
    if let Some(r) = rest.strip_prefix(' ') {
        if let Some(r) = r.trim_start().strip_prefix('"') {
            rest = quoted(r)?.1;
        }
    }
    Some((
        Warning {
            code,
            agent: agent.to_owned(),
            text,
        },
        rest,
    ))
}

/// The content of a quoted string whose opening quote is already consumed, unescaped, and
/// what follows its closing quote; `None` when it never closes.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut text = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((text, &s[i + 1..])),
            '\\' => text.push(chars.next()?.1),
            c => text.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Vec<(u16, String)> {
        let mut out = Vec::new();
        parse_warning_header(v, &mut out);
        out.into_iter().map(|w| (w.code, w.text)).collect()
    }

    #[test]
    fn parses_kube_apiserver_warnings() {
        assert_eq!(
            parse(r#"299 - "unknown field \"spec\"""#),
            vec![(299, r#"unknown field "spec""#.to_owned())]
        );
        assert_eq!(
            parse(r#"299 - "a", 299 - "b" "Mon, 23 Nov 2026 04:37:48 GMT" , 199 agent "c""#),
            vec![(299, "a".into()), (299, "b".into()), (199, "c".into())]
        );
    }

    #[test]
    fn drops_malformed_entries() {
        assert!(parse("").is_empty());
        assert!(parse("garbage").is_empty());
        assert!(parse(r#"29 - "x""#).is_empty());
        assert!(parse(r#"299 - "unterminated"#).is_empty());
        assert!(parse(r#"299 -"x""#).is_empty());
        assert_eq!(parse(r#"299 - "ok", nonsense"#), vec![(299, "ok".into())]);
        // Multi-byte text and a cut in the middle of a character never panic.
        assert_eq!(parse("299 - \"é\\\""), Vec::<(u16, String)>::new());
        assert_eq!(parse("2é9 - \"x\""), Vec::<(u16, String)>::new());
    }

    #[test]
    fn log_once_remembers_texts() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let c = calls.clone();
        let sink = WarningSink::new(WarningHandler::Custom(Arc::new(move |w: &Warning| {
            c.lock().push(w.text.clone())
        })));
        let mut h = HeaderMap::new();
        h.append("warning", r#"299 - "one""#.parse().unwrap());
        h.append("warning", r#"299 - "two""#.parse().unwrap());
        sink.handle("GET /x", &h);
        sink.handle("GET /x", &h);
        assert_eq!(*calls.lock(), vec!["one", "two", "one", "two"]);

        let once = WarningSink::new(WarningHandler::LogOnce);
        once.handle("GET /x", &h);
        once.handle("GET /x", &h);
        assert_eq!(once.seen.lock().len(), 2);
    }
}
