//! The CPU seconds this process has used, read from `/proc/self/stat` (Linux): the benches'
//! figure of what a run cost, which a loaded machine moves far less than wall time.

/// User and system CPU seconds of this process so far (every thread, exited ones too).
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces and parentheses): utime and
    // stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let number = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (number(11) + number(12)) as f64 / 100.0 // USER_HZ on Linux
}
