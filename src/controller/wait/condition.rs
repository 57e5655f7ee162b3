//! What a wait waits for: a [`Condition`] judges the latest state of one object.
//!
//! A condition sees the object as it is now (`None` when it does not exist) and answers
//! with a [`Verdict`]: met, still waiting (and for what, which a timeout reports), or failed
//! for good (a Job that failed will never complete; waiting on would only run into the
//! timeout). Any `Fn(Option<&K>) -> bool` is a condition too.

/// A condition's answer about the current state of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The condition holds: the wait ends with the object.
    Met,
    /// Not yet; what is still missing (reported when the wait times out).
    Waiting(String),
    /// It will not hold without someone changing the object: the wait ends with
    /// [`WaitError::Failed`](super::WaitError::Failed) and this reason.
    Failed(String),
}

impl Verdict {
    /// [`Verdict::Waiting`] with this text.
    pub fn waiting(why: impl Into<String>) -> Verdict {
        Verdict::Waiting(why.into())
    }
}

/// Judges one object's state: it sees the object as it is now (`None` when it does not
/// exist) and answers with a [`Verdict`]: met, still waiting (and for what, which a timeout
/// reports), or failed for good (a Job that failed will never complete; waiting on would
/// only run into the timeout). Any `Fn(Option<&K>) -> bool` is a condition too. The stock
/// ones are in [`conditions`](super::conditions).
///
/// ```
/// use kube_informer::api::DynamicObject;
/// use kube_informer::controller::wait::{Condition, Verdict};
///
/// // A closure returning bool is a condition: here, "has the label done=yes".
/// let done = |o: Option<&DynamicObject>| o.is_some_and(|o| o.metadata.label("done") == Some("yes"));
/// assert!(matches!(done.check(None), Verdict::Waiting(_)));
/// ```
pub trait Condition<K> {
    /// The verdict on the object's current state (`None`: it does not exist).
    fn check(&self, object: Option<&K>) -> Verdict;
}

impl<K, F: Fn(Option<&K>) -> bool> Condition<K> for F {
    fn check(&self, object: Option<&K>) -> Verdict {
        if self(object) {
            Verdict::Met
        } else {
            Verdict::waiting("the condition to hold")
        }
    }
}
