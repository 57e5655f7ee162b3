//! The failures of a pod request that name a choice the caller has to make: which
//! container, a previous container that does not exist, a pod with no node yet, an eviction
//! a PodDisruptionBudget refuses for now.
//!
//! kube-apiserver says these in prose (`400 BadRequest` with a message, `204 No Content`,
//! `429 TooManyRequests` with a `DisruptionBudget` cause). [`PodError::from_status`] reads the
//! captured wordings (`tests/fixtures/pod-io/`) into a [`PodError`] carried by
//! [`Error::Pod`](crate::Error::Pod), which keeps the server's `Status` too: a program can
//! match on the variant (list the containers, retry the eviction) instead of on text.

use crate::api::Status;

/// A pod request's failure that names what to choose.
///
/// kube-apiserver says these in prose (`400 BadRequest` with a message, `204 No Content`,
/// `429 TooManyRequests` with a `DisruptionBudget` cause); [`PodError::from_status`] reads
/// the captured wordings, and [`Error::Pod`](crate::Error::Pod) carries the result with the
/// server's `Status`: match on the variant (list the containers, retry the eviction)
/// instead of on text.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PodError {
    /// The pod has several containers and none was named: `400` "a container name must be
    /// specified for pod p2, choose one of: [a b]".
    ContainerRequired {
        /// The pod.
        pod: String,
        /// Its containers, in the server's order.
        containers: Vec<String>,
        /// Its init containers, when the server listed them.
        init_containers: Vec<String>,
    },
    /// The named container is not one of the pod's: `400` "container nope is not valid for
    /// pod p".
    UnknownContainer {
        /// The pod.
        pod: String,
        /// The name given.
        container: String,
    },
    /// `previous=true` but the container has not been restarted: `400` "previous terminated
    /// container \"main\" in pod \"p\" not found".
    NoPreviousContainer {
        /// The pod.
        pod: String,
        /// The container.
        container: String,
    },
    /// The pod has no node yet: its logs are `204 No Content` with no body (exec and attach
    /// say `400` "pod nonode does not have a host assigned").
    NotScheduled {
        /// The pod.
        pod: String,
    },
    /// An eviction refused for now by a PodDisruptionBudget (`429 TooManyRequests`, cause
    /// `DisruptionBudget`). Retry later: the budget allows it once enough pods are healthy.
    DisruptionBudget {
        /// The pod.
        pod: String,
        /// The budget's words, e.g. "The disruption budget web needs 2 healthy pods and has
        /// 2 currently".
        message: String,
        /// Seconds the server asked to wait (`details.retryAfterSeconds`), if any.
        retry_after_seconds: Option<u32>,
    },
}

impl PodError {
    /// Reads a failure Status of a request about `pod` into a [`PodError`], when it is one of
    /// the choices above (else `None`: the Status stays an [`Error::Api`](crate::Error::Api)).
    pub fn from_status(pod: &str, st: &Status) -> Option<PodError> {
        let m = st.message.as_str();
        if st.code == 429 {
            let cause = st
                .details
                .as_ref()
                .and_then(|d| d.causes.iter().find(|c| c.reason == "DisruptionBudget"))?;
            return Some(PodError::DisruptionBudget {
                pod: pod.to_owned(),
                message: cause.message.clone(),
                retry_after_seconds: st
                    .details
                    .as_ref()
                    .and_then(|d| d.retry_after_seconds)
                    .filter(|s| *s > 0),
            });
        }
        if st.code != 400 {
            return None;
        }
        if let Some(rest) = m.strip_prefix("a container name must be specified for pod ") {
            let (_, choices) = rest.split_once(", choose one of: ")?;
            let (containers, init) = match choices.split_once(" or one of the init containers: ") {
                Some((c, i)) => (c, Some(i)),
                None => (choices, None),
            };
            return Some(PodError::ContainerRequired {
                pod: pod.to_owned(),
                containers: bracketed_names(containers),
                init_containers: init.map(bracketed_names).unwrap_or_default(),
            });
        }
        if let Some(rest) = m.strip_prefix("container ") {
            if let Some(container) = rest.strip_suffix(&format!(" is not valid for pod {pod}")) {
                return Some(PodError::UnknownContainer {
                    pod: pod.to_owned(),
                    container: container.to_owned(),
                });
            }
        }
        if let Some(rest) = m.strip_prefix("previous terminated container \"") {
            let container = rest.split('"').next().unwrap_or_default();
            return Some(PodError::NoPreviousContainer {
                pod: pod.to_owned(),
                container: container.to_owned(),
            });
        }
        if m == format!("pod {pod} does not have a host assigned") {
            return Some(PodError::NotScheduled {
                pod: pod.to_owned(),
            });
        }
        None
    }
}

/// `[a b]` (Go's format of a string slice) into its names; stops at the first `]`.
fn bracketed_names(s: &str) -> Vec<String> {
    let inner = s.trim().trim_start_matches('[');
    let inner = inner.split(']').next().unwrap_or_default();
    inner.split_whitespace().map(str::to_owned).collect()
}

impl std::fmt::Display for PodError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PodError::ContainerRequired {
                pod,
                containers,
                init_containers,
            } => {
                write!(
                    f,
                    "pod {pod} has several containers: name one of {}",
                    containers.join(", ")
                )?;
                if !init_containers.is_empty() {
                    write!(f, " (init containers: {})", init_containers.join(", "))?;
                }
                Ok(())
            }
            PodError::UnknownContainer { pod, container } => {
                write!(f, "pod {pod} has no container {container}")
            }
            PodError::NoPreviousContainer { pod, container } => write!(
                f,
                "container {container} of pod {pod} has no previous (terminated) instance"
            ),
            PodError::NotScheduled { pod } => {
                write!(f, "pod {pod} is not scheduled to a node yet")
            }
            PodError::DisruptionBudget { pod, message, .. } => write!(
                f,
                "evicting pod {pod} would violate its disruption budget (retry later): {message}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, message: &str) -> Status {
        Status::failure(code, "BadRequest", message)
    }

    #[test]
    fn reads_the_captured_messages() {
        assert_eq!(
            PodError::from_status(
                "p2",
                &status(
                    400,
                    "a container name must be specified for pod p2, choose one of: [a b]"
                )
            ),
            Some(PodError::ContainerRequired {
                pod: "p2".into(),
                containers: vec!["a".into(), "b".into()],
                init_containers: vec![],
            })
        );
        assert_eq!(
            PodError::from_status(
                "p2",
                &status(400, "a container name must be specified for pod p2, choose one of: [a b] or one of the init containers: [i]")
            ),
            Some(PodError::ContainerRequired {
                pod: "p2".into(),
                containers: vec!["a".into(), "b".into()],
                init_containers: vec!["i".into()],
            })
        );
        assert_eq!(
            PodError::from_status("p", &status(400, "container nope is not valid for pod p")),
            Some(PodError::UnknownContainer {
                pod: "p".into(),
                container: "nope".into()
            })
        );
        assert_eq!(
            PodError::from_status(
                "p",
                &status(
                    400,
                    "previous terminated container \"main\" in pod \"p\" not found"
                )
            ),
            Some(PodError::NoPreviousContainer {
                pod: "p".into(),
                container: "main".into()
            })
        );
        assert_eq!(
            PodError::from_status(
                "nonode",
                &status(400, "pod nonode does not have a host assigned")
            ),
            Some(PodError::NotScheduled {
                pod: "nonode".into()
            })
        );
        assert_eq!(PodError::from_status("p", &status(400, "other")), None);
        assert_eq!(PodError::from_status("p", &status(429, "busy")), None);
    }
}
