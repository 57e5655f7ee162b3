//! The callout room: where the test server asks others, or answers about others.
//!
//! Admission webhooks called on writes (`webhooks.rs`), conversion webhooks for custom
//! resources served in several versions (`conversion.rs`), and the authentication and
//! authorisation reviews the server answers for others (`reviews.rs`: `TokenReview`,
//! `SubjectAccessReview`, `SelfSubjectReview`, `TokenRequest`). They live together because
//! each is about identities and outside parties (a webhook's HTTPS call, a caller's token),
//! beside the request path of [`serving`](super::serving) rather than inside it.

pub(super) mod conversion;
pub(super) mod reviews;
pub(super) mod webhooks;

// What the callouts take from the other rooms (their files name them `super::<module>`).
use super::schemas::crd;
use super::serving::{answers, http, peer};
use super::storage::{db, read_versions, store};
use super::writing::{json_patch, writes};
