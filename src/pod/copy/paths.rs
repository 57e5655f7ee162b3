//! Container paths as kubectl handles them (Go's `path.Clean`, `Dir`, `Base`, and
//! kubectl's stripping of leading `/` and `../`), and the lexical containment checks that
//! keep an extraction inside its destination.

/// Go's `path.Clean`: no `//`, no `.`, `..` resolved where it can be, no trailing `/`.
pub(crate) fn clean(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            c => out.push(c),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// Go's `path.Dir` (of a cleaned path).
pub(crate) fn dir(p: &str) -> String {
    let c = clean(p);
    match c.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => c[..i].to_owned(),
        None => ".".into(),
    }
}

/// Go's `path.Base` (of a cleaned path).
pub(crate) fn base(p: &str) -> String {
    let c = clean(p);
    if c == "/" {
        return c;
    }
    c.rsplit('/').next().unwrap_or("").to_owned()
}

/// The prefix every archived name of `remote` starts with: the path cleaned, without its
/// leading `/` and `../` (which the container's tar drops), `""` for `/` or `.`.
pub(crate) fn archive_prefix(remote: &str) -> String {
    let c = clean(remote.trim_start_matches(['/', '\\']));
    let mut s = c.as_str();
    while let Some(rest) = s.strip_prefix("../") {
        s = rest;
    }
    if s == "." || s == ".." {
        return String::new();
    }
    s.trim_start_matches('/').to_owned()
}

/// The components of an archived name below the prefix: `None` when one is `..` or the
/// name is absolute (it would leave the destination). On Windows, where `\` separates
/// too and `:` names a drive or a stream, a component holding either is refused as well,
/// and so is a device name (`NUL`, `COM1`, `con.txt`: opening it opens the device, in
/// any directory, not a file under the destination).
pub(crate) fn relative_components(rest: &str) -> Option<Vec<&str>> {
    if rest.starts_with('/') {
        return None;
    }
    let mut out = Vec::new();
    for c in rest.split('/') {
        match c {
            "" | "." => {}
            ".." => return None,
            c if cfg!(windows) && (c.contains(['\\', ':']) || windows_device(c)) => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// Whether Windows takes a name as a device (Go's `isReservedName`): `CON`, `PRN`, `AUX`,
/// `NUL`, `COM0`-`COM9`, `LPT0`-`LPT9` (and with `¹²³`), `CONIN$`, `CONOUT$`, whatever
/// the case and whatever follows a `.`, with trailing spaces ignored.
pub(crate) fn windows_device(name: &str) -> bool {
    let base = name
        .split(['.', ':'])
        .next()
        .unwrap_or("")
        .trim_end_matches(' ');
    let upper = base.to_ascii_uppercase();
    match upper.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$" => true,
        u if u.starts_with("COM") || u.starts_with("LPT") => {
            matches!(
                &u[3..],
                "0" | "1"
                    | "2"
                    | "3"
                    | "4"
                    | "5"
                    | "6"
                    | "7"
                    | "8"
                    | "9"
                    | "\u{b9}"
                    | "\u{b2}"
                    | "\u{b3}"
            )
        }
        _ => false,
    }
}

/// Whether a symlink in the directory `parent` (components below the destination) with
/// this `target` stays inside the destination. The target must be relative, some `..`
/// first (no more than `parent` is deep: `parent` is a real directory, as extraction never
/// writes through a symlink), then names only: a `..` after a name is refused, since the
/// name may itself be a symlink (to `.`, say) that `..` would then climb out of. Names
/// only descend: through links that, by the same rule, stay inside.
pub(crate) fn target_inside(parent: &[&str], target: &str) -> bool {
    if target.starts_with('/') || target.is_empty() {
        return false;
    }
    let (mut up, mut named) = (0usize, false);
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." if named => return false,
            ".." => up += 1,
            _ => named = true,
        }
    }
    up <= parent.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_like_go_and_kubectl() {
        assert_eq!(clean("/tmp//a/./b/../c/"), "/tmp/a/c");
        assert_eq!(clean("../../x"), "../../x");
        assert_eq!(clean("/../x"), "/x");
        assert_eq!(clean(""), ".");
        assert_eq!(dir("/tmp/a"), "/tmp");
        assert_eq!(dir("/a"), "/");
        assert_eq!(dir("a"), ".");
        assert_eq!(base("/tmp/a/"), "a");
        assert_eq!(archive_prefix("/tmp/foo/"), "tmp/foo");
        assert_eq!(archive_prefix("../../x/y"), "x/y");
        assert_eq!(archive_prefix("/"), "");
        assert_eq!(archive_prefix("."), "");
        assert_eq!(relative_components("/a/./b"), None);
        assert_eq!(relative_components("a/./b/"), Some(vec!["a", "b"]));
        assert_eq!(relative_components("a/../b"), None);
        let backslashed = relative_components("a\\..\\..\\b");
        assert_eq!(backslashed.is_none(), cfg!(windows));
        assert!(target_inside(&["a", "b"], "../c"));
        assert!(target_inside(&["a"], "../c"));
        assert!(!target_inside(&["a"], "../../c"));
        assert!(!target_inside(&[], "/etc/passwd"));
        assert!(!target_inside(&["a"], "x/../../../y"));
        assert!(!target_inside(&["a", "b"], "x/../y"));
        assert!(target_inside(&["a", "b"], "../../y/z"));
        for device in [
            "NUL",
            "con",
            "Aux.txt",
            "com1",
            "LPT9.tar.gz",
            "COM\u{b9}",
            "nul  ",
            "CONOUT$",
        ] {
            assert!(windows_device(device), "{device}");
        }
        for name in ["nully", "COM", "COM10", "LPT", "x.NUL", "console", ""] {
            assert!(!windows_device(name), "{name}");
        }
    }
}
