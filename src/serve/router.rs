//! Which handler answers which path.
//!
//! Exact paths (`/validate`, `/healthz`) and subtrees (`/readyz/` answers `/readyz/<anything>`);
//! an exact path wins over a subtree, a longer subtree over a shorter one. A path no route
//! matches is answered with 404 and the list of paths served. Methods are the handler's
//! business (a probe allows `GET` and `HEAD`, a webhook `POST`).

use std::sync::Arc;

use super::handler::{Handler, Request, Response};

/// Paths to handlers. Cheap to clone (handlers are shared).
#[derive(Clone, Default)]
pub struct Router {
    exact: Vec<(String, Arc<dyn Handler>)>,
    subtrees: Vec<(String, Arc<dyn Handler>)>,
}

impl Router {
    /// A router with no routes (everything is 404).
    pub fn new() -> Self {
        Router::default()
    }

    /// Answers `path` exactly (e.g. `/validate`) with `handler`; a later route for the same
    /// path replaces an earlier one.
    ///
    /// ```
    /// use kube_informer::serve::{Request, Response, Router};
    ///
    /// let router = Router::new().route("/hello", |_: &Request| Response::text(200, "hi\n"));
    /// assert!(router.paths().contains(&"/hello".to_string()));
    /// ```
    pub fn route(mut self, path: &str, handler: impl Handler) -> Self {
        self.exact.retain(|(p, _)| p != path);
        self.exact.push((path.to_string(), Arc::new(handler)));
        self
    }

    /// Answers every path under `prefix` (which should end with `/`, e.g. `/readyz/`) with
    /// `handler`, unless an exact route or a longer subtree matches.
    pub fn subtree(mut self, prefix: &str, handler: impl Handler) -> Self {
        self.subtrees.retain(|(p, _)| p != prefix);
        self.subtrees.push((prefix.to_string(), Arc::new(handler)));
        self.subtrees
            .sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        self
    }

    /// Every route, exact paths then subtrees (shown as `prefix*`), for a 404's body.
    pub fn paths(&self) -> Vec<String> {
        self.exact
            .iter()
            .map(|(p, _)| p.clone())
            .chain(self.subtrees.iter().map(|(p, _)| format!("{p}*")))
            .collect()
    }

    /// The handler for `path`, if any.
    pub fn find(&self, path: &str) -> Option<&Arc<dyn Handler>> {
        self.exact
            .iter()
            .find(|(p, _)| p == path)
            .or_else(|| self.subtrees.iter().find(|(p, _)| path.starts_with(p)))
            .map(|(_, h)| h)
    }
}

impl Handler for Router {
    fn handle(&self, request: &Request) -> Response {
        match self.find(&request.path) {
            Some(h) => h.handle(request),
            None => Response::text(
                404,
                format!(
                    "not found: {}; this server serves {}\n",
                    request.path,
                    self.paths().join(", ")
                ),
            ),
        }
    }
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("paths", &self.paths())
            .finish()
    }
}
