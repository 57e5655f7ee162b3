//! Where a resumed log follow picks up, and which lines of the new stream were already
//! delivered.
//!
//! A follow that drops is asked again with `sinceTime` = the last delivered line's time.
//! kube-apiserver accepts nanoseconds there but the kubelet gets whole seconds (captured:
//! `logs-sinceTime` and `logs-sinceTime-nano` answer the same lines), so the new stream
//! starts at the beginning of that second and repeats what was already delivered in it. The
//! cursor skips exactly those lines:
//!
//! - every line timed before the last delivered time (to the nanosecond);
//! - at the last delivered time itself, as many lines as were delivered with that exact time,
//!   compared in order by a hash of their bytes: two identical lines with identical
//!   nanosecond times are told apart by their count;
//! - everything after is new.
//!
//! This holds as long as the container's log is append-only with non-decreasing times (the
//! kubelet's CRI files are). A line at the last time whose bytes differ from the one
//! delivered in its place means the log changed under us (rotated, truncated): the cursor
//! stops skipping and delivers from there rather than guess.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use super::timestamp::LogTime;

/// The resume state of one follow (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct ResumeCursor {
    /// The time of the last delivered line.
    last: Option<LogTime>,
    /// Hashes of the lines delivered with exactly that time, in order. Bounded: a burst of
    /// more than `MAX_SAME_TIME` lines (or pieces of one long line) with one nanosecond time
    /// keeps counting (`count_at_last`) but stops remembering content beyond it; past the
    /// remembered ones a replay skips by count alone.
    at_last: Vec<u64>,
    /// How many lines were delivered with exactly that time (at least `at_last.len()`).
    count_at_last: usize,
    /// While replaying after a reconnect: how many of `at_last` were matched again.
    replay: Option<usize>,
}

const MAX_SAME_TIME: usize = 1 << 16;

fn hash_of(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

impl ResumeCursor {
    /// Whether anything was delivered yet.
    pub(crate) fn last(&self) -> Option<LogTime> {
        self.last
    }

    /// A new stream starts (from [`last`](Self::last)'s whole second): replay from there.
    pub(crate) fn reconnected(&mut self) {
        if self.last.is_some() {
            self.replay = Some(0);
        }
    }

    /// Decides about one line (or piece) of the stream: true to deliver it (and remember
    /// it), false when it was delivered before the reconnect.
    pub(crate) fn admit(&mut self, time: LogTime, bytes: &[u8]) -> bool {
        if let (Some(matched), Some(last)) = (self.replay, self.last) {
            if time < last {
                return false;
            }
            if time == last {
                let same = match self.at_last.get(matched) {
                    Some(&h) => h == hash_of(bytes),
                    // Delivered, but its content was not remembered: skipped by count.
                    None => matched < self.count_at_last,
                };
                if same {
                    self.replay = Some(matched + 1);
                    return false;
                }
            }
            // Past what was delivered (or the log changed): deliver from here on.
            self.replay = None;
        }
        let h = hash_of(bytes);
        if self.last == Some(time) {
            if self.at_last.len() < MAX_SAME_TIME {
                self.at_last.push(h);
            }
            self.count_at_last += 1;
        } else {
            self.last = Some(time);
            self.at_last.clear();
            self.at_last.push(h);
            self.count_at_last = 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: u64, nanos: u32) -> LogTime {
        LogTime { secs, nanos }
    }

    #[test]
    fn skips_exactly_what_was_delivered_within_the_second() {
        let mut c = ResumeCursor::default();
        assert!(c.admit(t(10, 5), b"a"));
        assert!(c.admit(t(11, 1), b"b"));
        assert!(c.admit(t(11, 7), b"dup"));
        assert!(c.admit(t(11, 7), b"dup"));
        // Dropped here; the server had a third "dup" at 11.000000007 and one more line.
        c.reconnected();
        assert!(!c.admit(t(11, 1), b"b"));
        assert!(!c.admit(t(11, 7), b"dup"));
        assert!(!c.admit(t(11, 7), b"dup"));
        assert!(c.admit(t(11, 7), b"dup"), "the third identical line is new");
        assert!(c.admit(t(11, 9), b"c"));
        // A second drop right away replays all three.
        c.reconnected();
        assert!(!c.admit(t(11, 7), b"dup"));
        assert!(!c.admit(t(11, 9), b"c"));
        assert!(c.admit(t(12, 0), b"d"));
    }

    #[test]
    fn past_the_remembered_lines_of_one_time_a_replay_skips_by_count() {
        let mut c = ResumeCursor::default();
        let n = MAX_SAME_TIME + 10;
        for i in 0..n {
            assert!(c.admit(t(11, 7), format!("line {i}").as_bytes()));
        }
        c.reconnected();
        for i in 0..n {
            let line = format!("line {i}");
            assert!(
                !c.admit(t(11, 7), line.as_bytes()),
                "{line} delivered twice"
            );
        }
        assert!(c.admit(t(11, 7), b"new"));
        assert!(c.admit(t(12, 0), b"newer"));
    }

    #[test]
    fn a_changed_log_is_delivered_rather_than_guessed() {
        let mut c = ResumeCursor::default();
        assert!(c.admit(t(11, 7), b"x"));
        c.reconnected();
        assert!(c.admit(t(11, 7), b"y"));
        assert!(c.admit(t(11, 7), b"x"), "no longer replaying");
    }
}
