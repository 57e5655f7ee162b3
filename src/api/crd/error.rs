//! Why a CustomResourceDefinition could not be generated.

use std::fmt;

/// Why [`CrdBuilder::build`](super::CrdBuilder::build) refused: a part of a type that has no
/// structural schema (named by its JSON path, e.g. `.spec.mode`), or a part of the definition
/// kube-apiserver would refuse (a group without a dot, two storage versions, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdError {
    /// The JSON path of the field (`.spec.items[].mode`), or the part of the definition
    /// (`spec.group`).
    pub path: String,
    /// What is wrong with it, and what to do instead.
    pub problem: String,
}

impl CrdError {
    pub(crate) fn at(path: &str, problem: impl Into<String>) -> Self {
        CrdError {
            path: path.to_owned(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for CrdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CustomResourceDefinition: {} {}",
            self.path, self.problem
        )
    }
}

impl std::error::Error for CrdError {}
