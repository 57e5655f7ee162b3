//! The hooks as [`Handler`]s of the crate's server ([`crate::serve`]): mount each on a path
//! of a [`Router`](crate::serve::Router), several on one server.
//!
//! The server bounds the body (its `max_body_bytes`, 413 beyond) before a hook sees it; the
//! hook's own bound ([`AdmissionHook::max_body`]) applies too. A request other than `POST`
//! is 405; every answer is JSON.

use super::conversion::ConversionHook;
use super::hook::{error_body, AdmissionHook};
use crate::serve::{Handler, Request, Response};

fn answer(request: &Request, review: impl FnOnce(&[u8]) -> (u16, Vec<u8>)) -> Response {
    let (status, body) = if request.method == "POST" {
        review(&request.body)
    } else {
        (
            405,
            error_body(
                405,
                "MethodNotAllowed",
                format!("webhooks take POST, not {}", request.method),
            ),
        )
    };
    Response::new(status)
        .with_header("Content-Type", "application/json")
        .with_body(body)
}

impl Handler for AdmissionHook {
    fn handle(&self, request: &Request) -> Response {
        answer(request, |b| self.review(b))
    }
}

impl Handler for ConversionHook {
    fn handle(&self, request: &Request) -> Response {
        answer(request, |b| self.review(b))
    }
}
