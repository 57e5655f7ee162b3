//! Adversarial extraction: the container chooses the tar stream byte for byte, and nothing
//! is ever created, written, linked or followed outside the destination the user named.
//! Archives are built with `TarWriter` or raw headers; each test checks a sentinel tree
//! around the destination is untouched.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;

use kube_informer::pod::copy::{extract_archive, CopyOptions};
use kube_informer::pod::tar::{TarError, TarWriter};
use kube_informer::pod::CopyError;

const BLOCK: usize = 512;

/// What `root` holds, every level, without following symlinks (modes included).
fn snapshot(root: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let m = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let mode = m.mode() & 0o7777;
            if m.file_type().is_symlink() {
                out.push((rel, format!("-> {:?}", fs::read_link(&p).unwrap())));
            } else if m.is_dir() {
                out.push((rel, format!("dir {mode:o}")));
                walk(&p, root, out);
            } else {
                out.push((
                    rel,
                    format!("{mode:o} {:?} ino {}", fs::read(&p).unwrap(), m.ino()),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// A root holding `home/.ssh/authorized_keys`, `side/`, `secret` (a file), and `out`
/// (the destination, absent unless `existing`).
fn world(existing: bool) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir_all(root.path().join("home/.ssh")).unwrap();
    fs::write(root.path().join("home/.ssh/authorized_keys"), b"mine\n").unwrap();
    fs::create_dir(root.path().join("side")).unwrap();
    fs::write(root.path().join("secret"), b"secret\n").unwrap();
    if existing {
        fs::create_dir(root.path().join("out")).unwrap();
        fs::write(root.path().join("out/keep"), b"keep\n").unwrap();
    }
    root
}

fn outside(root: &Path) -> Vec<(String, String)> {
    snapshot(root)
        .into_iter()
        .filter(|(p, _)| p != "out" && !p.starts_with("out/"))
        .collect()
}

/// Extracts `archive` (remote `/x`) into `root/out` and checks nothing outside changed
/// and `out` is not a symlink; gives the result.
fn attack(root: &Path, remote: &str, archive: &[u8], skip: bool) -> Result<(), CopyError> {
    let before = outside(root);
    let o = CopyOptions::new().skip_escaping_symlinks(skip);
    let dest = root.join("out");
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        extract_archive(archive, remote, &dest, &o)
    }));
    let got = got.expect("extraction panicked");
    assert_eq!(outside(root), before, "something changed outside: {got:?}");
    if let Ok(m) = fs::symlink_metadata(&dest) {
        assert!(
            !m.file_type().is_symlink(),
            "the destination became a symlink"
        );
    }
    got.map(|_| ())
}

fn crafted(build: impl FnOnce(&mut TarWriter<Vec<u8>>)) -> Vec<u8> {
    let mut w = TarWriter::new(Vec::new());
    build(&mut w);
    w.finish().unwrap();
    w.into_inner()
}

/// A raw header block: name, type flag, size field (raw 12 bytes), link name, ustar prefix.
fn raw(name: &[u8], flag: u8, size: &[u8; 12], link: &[u8], prefix: &[u8]) -> [u8; BLOCK] {
    let mut b = [0u8; BLOCK];
    b[..name.len()].copy_from_slice(name);
    b[100..108].copy_from_slice(b"0000644\0");
    b[108..116].copy_from_slice(b"0000000\0");
    b[116..124].copy_from_slice(b"0000000\0");
    b[124..136].copy_from_slice(size);
    b[136..148].copy_from_slice(b"00000000000\0");
    b[156] = flag;
    b[157..157 + link.len()].copy_from_slice(link);
    b[257..263].copy_from_slice(b"ustar\0");
    b[263..265].copy_from_slice(b"00");
    b[345..345 + prefix.len()].copy_from_slice(prefix);
    fix_sum(&mut b);
    b
}

fn fix_sum(b: &mut [u8; BLOCK]) {
    b[148..156].copy_from_slice(b"        ");
    let sum: u32 = b.iter().map(|&x| u32::from(x)).sum();
    let s = format!("{sum:06o}\0 ");
    b[148..156].copy_from_slice(s.as_bytes());
}

fn size_field(n: u64) -> [u8; 12] {
    let mut f = [0u8; 12];
    f[..11].copy_from_slice(format!("{n:011o}").as_bytes());
    f
}

fn pax(records: &[(&str, &str)]) -> Vec<u8> {
    let mut data = Vec::new();
    for (k, v) in records {
        let body = k.len() + v.len() + 3;
        let mut len = body + 1;
        while body + len.to_string().len() != len {
            len = body + len.to_string().len();
        }
        data.extend_from_slice(format!("{len} {k}={v}\n").as_bytes());
    }
    let mut out = raw(b"PaxHeader", b'x', &size_field(data.len() as u64), b"", b"").to_vec();
    out.extend_from_slice(&data);
    out.resize(out.len().div_ceil(BLOCK) * BLOCK, 0);
    out
}

fn gnu_long(flag: u8, value: &str) -> Vec<u8> {
    let mut data = value.as_bytes().to_vec();
    data.push(0);
    let mut out = raw(
        b"././@LongLink",
        flag,
        &size_field(data.len() as u64),
        b"",
        b"",
    )
    .to_vec();
    out.extend_from_slice(&data);
    out.resize(out.len().div_ceil(BLOCK) * BLOCK, 0);
    out
}

fn file(name: &str, data: &[u8]) -> Vec<u8> {
    let mut out = raw(
        name.as_bytes(),
        b'0',
        &size_field(data.len() as u64),
        b"",
        b"",
    )
    .to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(BLOCK) * BLOCK, 0);
    out
}

fn end(mut v: Vec<u8>) -> Vec<u8> {
    v.extend_from_slice(&[0u8; 2 * BLOCK]);
    v
}

/// A directory replaced by a symlink (refused: the directory stays), then a file written
/// under that name; a file replaced by a symlink, then written under; in both modes and
/// into a fresh or an existing destination.
#[test]
fn duplicates_never_turn_a_directory_or_file_into_a_way_out() {
    for target in ["../home/.ssh", "../../home/.ssh", "/", "../secret", ".."] {
        let cases = [
            crafted(|w| {
                w.append_dir("x/d", 0o755, 0).unwrap();
                w.append_symlink("x/d", target, 0).unwrap();
                w.append_file("x/d/authorized_keys", 0o644, 0, 5, &b"evil\n"[..])
                    .unwrap();
            }),
            crafted(|w| {
                w.append_file("x/d", 0o644, 0, 1, &b"1"[..]).unwrap();
                w.append_symlink("x/d", target, 0).unwrap();
                w.append_file("x/d/authorized_keys", 0o644, 0, 5, &b"evil\n"[..])
                    .unwrap();
                w.append_file("x/d", 0o644, 0, 5, &b"evil\n"[..]).unwrap();
            }),
            crafted(|w| {
                w.append_dir("x/a/b", 0o755, 0).unwrap();
                w.append_symlink("x/a/b/l", "..", 0).unwrap(); // -> x/a, inside
                w.append_symlink("x/a/m", "b/l", 0).unwrap(); // -> x/a
                w.append_symlink("x/top", "a/m", 0).unwrap(); // -> x/a
                w.append_file("x/top/f", 0o644, 0, 1, &b"!"[..]).unwrap();
            }),
        ];
        for (i, archive) in cases.iter().enumerate() {
            for existing in [false, true] {
                for skip in [false, true] {
                    let root = world(existing);
                    let got = attack(root.path(), "/x", archive, skip);
                    if i < 2 {
                        assert!(got.is_err() || skip, "{target} {i}: {got:?}");
                    } else {
                        assert!(
                            matches!(got, Err(CopyError::ThroughSymlink { .. })),
                            "{i}: {got:?}"
                        );
                    }
                }
            }
        }
    }
}

/// A hard link then a write of the linked name (and of the link): the first file keeps
/// its data, and a file outside hard-linked into an existing destination is never written.
#[test]
fn hard_links_then_overwrites_never_write_an_inode_twice() {
    let root = world(true);
    fs::hard_link(root.path().join("secret"), root.path().join("out/alias")).unwrap();
    let archive = crafted(|w| {
        w.append_file("x/f", 0o644, 0, 3, &b"one"[..]).unwrap();
        w.append_hard_link("x/g", "x/f", 0).unwrap();
        w.append_file("x/f", 0o600, 0, 3, &b"two"[..]).unwrap();
        w.append_hard_link("x/i", "x/g", 0).unwrap();
        w.append_file("x/alias", 0o777, 0, 4, &b"evil"[..]).unwrap();
        w.append_dir("x/alias", 0o777, 0).unwrap();
    });
    attack(root.path(), "/x", &archive, false).unwrap();
    let out = root.path().join("out");
    assert_eq!(fs::read(out.join("g")).unwrap(), b"one");
    assert_eq!(fs::read(out.join("i")).unwrap(), b"one");
    assert_eq!(fs::read(out.join("f")).unwrap(), b"two");
    assert_eq!(fs::read(root.path().join("secret")).unwrap(), b"secret\n");
    assert_eq!(
        fs::metadata(root.path().join("secret")).unwrap().mode() & 0o777,
        0o644
    );
}

/// A hard link to a file that was in the destination before the copy (the user's own, or
/// a name of a file outside) is refused: the container never gives a user's file another
/// name, nor writes through one. kubectl makes every hard link entry an empty file; a
/// link to a file the copy extracted is kept (tar's hard links, in the same archive).
#[test]
fn a_hard_link_never_names_a_file_that_was_there_before() {
    for target in ["x/keep", "x/alias"] {
        let root = world(true);
        let alias = root.path().join("out/alias");
        fs::hard_link(root.path().join("secret"), &alias).unwrap();
        let archive = crafted(|w| {
            w.append_hard_link("x/h", target, 0).unwrap();
            w.append_file("x/h", 0o777, 0, 4, &b"evil"[..]).unwrap();
        });
        let before = snapshot(root.path());
        let got = attack(root.path(), "/x", &archive, false);
        assert!(
            matches!(&got, Err(CopyError::HardLinkTarget { entry, .. }) if entry == "x/h"),
            "{target}: {got:?}"
        );
        assert_eq!(snapshot(root.path()), before, "{target}");
        assert!(fs::symlink_metadata(root.path().join("out/h")).is_err());
        assert_eq!(
            fs::metadata(root.path().join("out/keep")).unwrap().nlink(),
            1
        );
        assert_eq!(fs::metadata(root.path().join("secret")).unwrap().nlink(), 2);
    }
    // A name the archive wrote first is the copy's own file: linking it is fine.
    let root = world(true);
    let archive = crafted(|w| {
        w.append_file("x/keep", 0o644, 0, 3, &b"new"[..]).unwrap();
        w.append_hard_link("x/h", "x/keep", 0).unwrap();
    });
    attack(root.path(), "/x", &archive, false).unwrap();
    let out = root.path().join("out");
    assert_eq!(fs::read(out.join("h")).unwrap(), b"new");
    assert_eq!(fs::metadata(out.join("keep")).unwrap().nlink(), 2);
}

/// GNU long names and PAX `path`/`linkpath` override a harmless ustar name or link name.
#[test]
fn long_names_and_pax_records_override_the_ustar_fields_and_are_judged() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "pax path",
            end([pax(&[("path", "x/../../side/evil")]), file("x/ok", b"!")].concat()),
        ),
        (
            "gnu name",
            end([gnu_long(b'L', "x/../side/evil"), file("x/ok", b"!")].concat()),
        ),
        (
            "pax absolute",
            end([pax(&[("path", "/side/evil")]), file("x/ok", b"!")].concat()),
        ),
        (
            "pax linkpath",
            end([
                pax(&[("linkpath", "../../home/.ssh")]),
                raw(b"x/l", b'2', &size_field(0), b"ok", b"").to_vec(),
                file("x/l/authorized_keys", b"evil\n"),
            ]
            .concat()),
        ),
        (
            "gnu link",
            end([
                gnu_long(b'K', "../home/.ssh"),
                raw(b"x/l", b'2', &size_field(0), b"ok", b"").to_vec(),
                file("x/l/authorized_keys", b"evil\n"),
            ]
            .concat()),
        ),
        (
            "pax then gnu, last wins",
            end([
                pax(&[("path", "x/fine")]),
                gnu_long(b'L', "x/../../secret"),
                file("x/ok", b"!"),
            ]
            .concat()),
        ),
        (
            "ustar prefix",
            end([raw(b"../side/evil", b'0', &size_field(0), b"", b"x").to_vec()].concat()),
        ),
        (
            "hard link via pax linkpath",
            end([
                raw(b"x/", b'5', &size_field(0), b"", b"").to_vec(),
                pax(&[("linkpath", "x/../../secret")]),
                raw(b"x/h", b'1', &size_field(0), b"x/ok", b"").to_vec(),
            ]
            .concat()),
        ),
    ];
    for (what, archive) in cases {
        for existing in [false, true] {
            for skip in [false, true] {
                let root = world(existing);
                let got = attack(root.path(), "/x", &archive, skip);
                if !skip {
                    assert!(got.is_err(), "{what}: {got:?}");
                }
            }
        }
    }
}

/// Names that are the destination itself: `x`, `x/`, `x/.`, `x//`, `x/./.`, and with
/// remote `/` the empty name and `.`; as a symlink, a hard link, a file, a device.
#[test]
fn names_that_are_the_destination_itself() {
    let names = [
        "x", "x/", "x/.", "x//", "x/./.", "x/./", ".", "", "./", "/", "//",
    ];
    for remote in ["/x", "/"] {
        for name in names {
            for flag in [b'0', b'1', b'2', b'3', b'4', b'6', b'5'] {
                for link in ["..", ".", "../side", "x", "x/keep", "keep", "/"] {
                    let archive = end([
                        raw(name.as_bytes(), flag, &size_field(0), link.as_bytes(), b"").to_vec(),
                        file(if remote == "/" { "evil" } else { "x/evil" }, b"!"),
                        raw(b"x/keep", b'2', &size_field(0), b"../secret", b"").to_vec(),
                    ]
                    .concat());
                    for existing in [false, true] {
                        let root = world(existing);
                        let _ = attack(root.path(), remote, &archive, true);
                    }
                }
            }
        }
    }
}

/// Devices, fifos, sockets, GNU sparse and unknown types are never created.
#[test]
fn devices_and_fifos_are_skipped_never_created() {
    let mut entries = vec![raw(b"x/", b'5', &size_field(0), b"", b"").to_vec()];
    for (i, flag) in [b'3', b'4', b'6', b'S', b'V', b'M', b'D', b'N', b'Z']
        .iter()
        .enumerate()
    {
        let name = format!("x/n{i}");
        let mut h = raw(name.as_bytes(), *flag, &size_field(700), b"/dev/sda", b"");
        h[329..337].copy_from_slice(b"0000010\0"); // major
        fix_sum(&mut h);
        entries.push(h.to_vec());
        if !matches!(flag, b'3' | b'4' | b'6') {
            entries.push(vec![0x41; 1024]); // 700 bytes of data, padded
        }
    }
    let root = world(false);
    attack(root.path(), "/x", &end(entries.concat()), false).unwrap();
    let made: Vec<_> = fs::read_dir(root.path().join("out")).unwrap().collect();
    assert!(made.is_empty(), "{made:?}");
}

/// Huge size fields (octal, base-256, PAX) with little data: a typed error, no panic,
/// no huge allocation.
#[test]
fn huge_sizes_and_truncated_streams_are_typed_errors() {
    let mut b256 = [0u8; 12];
    b256[0] = 0x80;
    b256[4..].copy_from_slice(&(i64::MAX as u64).to_be_bytes());
    let cases: Vec<Vec<u8>> = vec![
        [raw(b"x/f", b'0', &b256, b"", b"").to_vec(), vec![1; 100]].concat(),
        [raw(b"x/f", b'3', &b256, b"", b"").to_vec(), vec![1; 100]].concat(), // no data: ends
        [raw(b"x/f", b'Z', &b256, b"", b"").to_vec(), vec![1; 100]].concat(),
        [raw(b"x/f", b'L', &b256, b"", b"").to_vec(), vec![1; 100]].concat(),
        [
            raw(b"x/f", b'x', &size_field(64 * 1024), b"", b"").to_vec(),
            vec![1; 100],
        ]
        .concat(),
        [
            pax(&[("size", "9223372036854775807")]),
            raw(b"x/f", b'0', &size_field(0), b"", b"").to_vec(),
        ]
        .concat(),
        [pax(&[("size", "18446744073709551615")])].concat(),
        [pax(&[("size", "-1")])].concat(),
        [pax(&[("mtime", "-99999999999999999999")])].concat(),
        file("x/f", &[7; 2000])[..700].to_vec(),
        raw(b"x/f", b'0', &size_field(1), b"", b"")[..300].to_vec(),
    ];
    for (i, archive) in cases.iter().enumerate() {
        let root = world(false);
        let got = attack(root.path(), "/x", archive, false);
        assert!(
            matches!(
                got,
                Err(CopyError::Archive(
                    TarError::Truncated { .. }
                        | TarError::Malformed { .. }
                        | TarError::TooLarge { .. }
                ))
            ),
            "{i}: {got:?}"
        );
    }
}

/// The largest mtimes (base-256 and PAX): never a panic (on Windows, `UNIX_EPOCH + secs`
/// overflows `SystemTime` past about year 30828).
#[test]
fn the_largest_mtimes_never_panic() {
    let mut b256 = [0u8; 12];
    b256[0] = 0x80;
    b256[4..].copy_from_slice(&(i64::MAX as u64).to_be_bytes());
    let mut h = raw(b"x/f", b'0', &size_field(1), b"", b"");
    h[136..148].copy_from_slice(&b256);
    fix_sum(&mut h);
    let mut data = h.to_vec();
    data.push(b'!');
    data.resize(2 * BLOCK, 0);
    for archive in [
        end(data),
        end([
            pax(&[("mtime", "9223372036854775807.999")]),
            file("x/f", b"!"),
        ]
        .concat()),
        end([pax(&[("mtime", "-9223372036854775808")]), file("x/f", b"!")].concat()),
    ] {
        let root = world(false);
        let _ = attack(root.path(), "/x", &archive, false);
    }
}

/// Random damage to archives full of traps: never a panic, nothing outside.
#[test]
fn mutated_archives_never_panic_nor_leave_the_destination() {
    let base = crafted(|w| {
        w.append_dir("x/a/b", 0o755, 0).unwrap();
        w.append_symlink("x/a/b/l", "..", 0).unwrap();
        w.append_symlink("x/a/up", "../../side", 0).unwrap();
        w.append_file("x/a/f", 0o644, 0, 600, &[9u8; 600][..])
            .unwrap();
        w.append_hard_link("x/a/h", "x/a/f", 0).unwrap();
        w.append_file(&format!("x/{}", "n".repeat(150)), 0o644, 0, 1, &b"!"[..])
            .unwrap();
        w.append_symlink("x/a/lng", &"../".repeat(40), 0).unwrap();
    });
    let mut state: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let interesting: &[u8] = b"./\0 x1257LKx0\x80\xff";
    for round in 0..400 {
        let mut a = base.clone();
        for _ in 0..1 + next() % 6 {
            let at = (next() as usize) % a.len();
            a[at] = interesting[(next() as usize) % interesting.len()];
        }
        // Keep most headers valid: fix every checksum of a block that looks like a header.
        if round % 2 == 0 {
            for blk in a.chunks_mut(BLOCK) {
                if &blk[257..262] == b"ustar" {
                    let b: &mut [u8; BLOCK] = blk.try_into().unwrap();
                    fix_sum(b);
                }
            }
        }
        if round % 5 == 0 {
            let cut = (next() as usize) % a.len();
            a.truncate(cut);
        }
        let root = world(round % 3 == 0);
        let _ = attack(root.path(), "/x", &a, round % 4 == 0);
    }
}

/// A symlink the copy creates whose target only descends (names, no `..`) may go through
/// a symlink the user already had in the destination (`out/cache -> ../home`): refused
/// (skipped in `skip_escaping_symlinks` mode), as any other way out; through links that
/// stay inside (the user's or the copy's own), still made.
#[test]
fn a_symlink_through_a_symlink_already_in_the_destination_is_an_escape() {
    // (the user's links in `out`, the archive's links: name, target, whether inside)
    type Links<'a> = &'a [(&'a str, &'a str, bool)];
    let cases: &[(&[(&str, &str)], Links)] = &[
        (&[("cache", "../home")], &[("x/l", "cache/.ssh", false)]),
        (&[("cache", "../home")], &[("x/l", "cache", false)]),
        (&[("abs", "/")], &[("x/d/l", "../abs/etc", false)]),
        (
            &[("dot", "."), ("cache", "../home")],
            &[("x/l", "dot/dot/cache", false)],
        ),
        (
            &[("sub", "d"), ("d/up", "../../side")],
            &[("x/l", "sub/up", false)],
        ),
        // `sub -> d`, `d/up -> ..` (out itself): `sub/up/up` is out too, inside; but
        // `sub/up/back` where `back -> ..` at out's level leaves.
        (
            &[("sub", "d"), ("d/up", ".."), ("back", "..")],
            &[
                ("x/l", "sub/up/up/keep", true),
                ("x/m", "sub/up/back", false),
            ],
        ),
        // The copy's own links, chained: inside.
        (
            &[],
            &[
                ("x/d/e/up", "../..", true),
                ("x/m", "d/e/up/d/e/up/keep", true),
                ("x/n", "m", true),
            ],
        ),
        // Through a file (nowhere, not out), in an existing `out` holding `keep`.
        (&[], &[("x/l", "keep/a/b", true)]),
        // A loop, and a chain longer than the kernel follows.
        (&[("p", "q"), ("q", "p")], &[("x/l", "p", false)]),
        (
            &[("s", ".")],
            &[
                ("x/l", &"s/".repeat(41), false),
                ("x/k", &"s/".repeat(39), true),
            ],
        ),
    ];
    for (mine, links) in cases {
        for skip in [false, true] {
            let root = world(true);
            let out = root.path().join("out");
            fs::create_dir_all(out.join("d")).unwrap();
            for (name, target) in *mine {
                symlink(target, out.join(name)).unwrap();
            }
            let archive = crafted(|w| {
                for (name, target, _) in *links {
                    w.append_symlink(name, target, 0).unwrap();
                }
            });
            let got = attack(root.path(), "/x", &archive, skip);
            let case = format!("{mine:?} {links:?} skip {skip}: {got:?}");
            let all_inside = links.iter().all(|l| l.2);
            assert_eq!(got.is_ok(), all_inside || skip, "{case}");
            let real_out = fs::canonicalize(&out).unwrap();
            for (name, _, inside) in *links {
                let l = out.join(name.strip_prefix("x/").unwrap());
                let made = fs::symlink_metadata(&l).is_ok();
                if let Ok(r) = fs::canonicalize(&l) {
                    assert!(r.starts_with(&real_out), "{case}: {} -> {r:?}", l.display());
                }
                if !inside {
                    assert!(!made, "{case}: {} made", l.display());
                }
            }
        }
    }
}

/// The destination the user named (an existing directory, here one of their own with
/// mode 0700) takes the mode the container gives its root directory entry: a copy into
/// `~` can make the home directory world-writable.
#[test]
fn an_existing_destination_keeps_its_mode() {
    let root = world(true);
    let out = root.path().join("out");
    fs::set_permissions(&out, fs::Permissions::from_mode(0o700)).unwrap();
    let archive = crafted(|w| {
        w.append_dir("x", 0o777, 0).unwrap();
    });
    attack(root.path(), "/x", &archive, false).unwrap();
    assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, 0o700);
}

/// A container's world-writable modes go through the umask, as kubectl's and a non-root
/// `tar -x`'s: under `022` a `0666` file is `0644` and a `0777` directory `0755`, so nobody
/// else can write into what was copied (the test binary keeps the usual `022`: checked).
#[test]
fn world_writable_modes_go_through_the_umask() {
    let root = tempfile::tempdir().unwrap();
    let probe = root.path().join("probe");
    fs::create_dir(&probe).unwrap();
    let umask = !fs::metadata(&probe).unwrap().mode() & 0o777;
    let mut w = TarWriter::new(Vec::new());
    w.append_dir("x", 0o777, 0).unwrap();
    w.append_dir("x/d", 0o777, 0).unwrap();
    w.append_file("x/d/f", 0o666, 0, 2, &b"hi"[..]).unwrap();
    w.append_file("x/run", 0o4777, 0, 2, &b"#!"[..]).unwrap();
    w.finish().unwrap();
    let out = root.path().join("out");
    extract_archive(&w.into_inner()[..], "x", &out, &CopyOptions::new()).unwrap();
    let mode = |p: &str| fs::metadata(out.join(p)).unwrap().mode() & 0o7777;
    assert_eq!(mode(""), 0o777 & !umask);
    assert_eq!(mode("d"), 0o777 & !umask);
    assert_eq!(mode("d/f"), 0o666 & !umask);
    assert_eq!(mode("run"), 0o777 & !umask, "never set-user-ID");
    if umask == 0o022 {
        assert_eq!((mode("d"), mode("d/f")), (0o755, 0o644));
    }
}

/// A hard link entry names a file this copy extracted, and only while that name still is
/// that file: not once the name became a symlink (even one inside, to a file that was there
/// before), not a directory the copy made, not through `..`, not the copied path when the
/// user named an existing file. Each is refused and nothing that was there gets a name.
#[test]
fn a_hard_link_never_reaches_past_the_files_the_copy_extracted() {
    type Build = fn(&mut TarWriter<Vec<u8>>);
    let cases: [(&str, Build); 4] = [
        (
            "a file replaced by a symlink to a file that was there",
            |w| {
                w.append_file("x/f", 0o644, 0, 3, &b"one"[..]).unwrap();
                w.append_symlink("x/f", "keep", 0).unwrap();
                w.append_hard_link("x/h", "x/f", 0).unwrap();
            },
        ),
        ("a directory the copy made", |w| {
            w.append_dir("x/d", 0o755, 0).unwrap();
            w.append_file("x/d/f", 0o644, 0, 3, &b"one"[..]).unwrap();
            w.append_hard_link("x/h", "x/d", 0).unwrap();
        }),
        ("a file reached through `..`", |w| {
            w.append_dir("x/d", 0o755, 0).unwrap();
            w.append_file("x/d/f", 0o644, 0, 3, &b"one"[..]).unwrap();
            w.append_hard_link("x/h", "x/d/../d/f", 0).unwrap();
        }),
        (
            "a file whose folder became a symlink to a folder that was there",
            |w| {
                w.append_dir("x/d", 0o755, 0).unwrap();
                w.append_file("x/d/keep", 0o644, 0, 3, &b"one"[..]).unwrap();
                w.append_file("x/e", 0o644, 0, 0, &b""[..]).unwrap();
                w.append_symlink("x/e", ".", 0).unwrap();
                w.append_hard_link("x/h", "x/e/keep", 0).unwrap();
            },
        ),
    ];
    for (what, build) in cases {
        let root = world(true);
        let archive = crafted(build);
        let got = attack(root.path(), "/x", &archive, false);
        assert!(
            matches!(
                &got,
                Err(CopyError::HardLinkTarget { .. }
                    | CopyError::PathEscape { .. }
                    | CopyError::ThroughSymlink { .. })
            ),
            "{what}: {got:?}"
        );
        let out = root.path().join("out");
        assert!(fs::symlink_metadata(out.join("h")).is_err(), "{what}");
        assert_eq!(fs::metadata(out.join("keep")).unwrap().nlink(), 1, "{what}");
        assert_eq!(fs::read(out.join("keep")).unwrap(), b"keep\n", "{what}");
    }

    // The user named an existing file: the copied path is that name, never a link target.
    let root = world(true);
    let archive = crafted(|w| {
        w.append_file("x", 0o644, 0, 3, &b"new"[..]).unwrap();
        w.append_hard_link("x", "x", 0).unwrap();
    });
    let dest = root.path().join("out/keep");
    let got = extract_archive(&archive[..], "/x", &dest, &CopyOptions::new());
    assert!(
        matches!(&got, Err(CopyError::HardLinkTarget { .. })),
        "{got:?}"
    );
    assert_eq!(fs::read(&dest).unwrap(), b"new");
    assert_eq!(fs::metadata(&dest).unwrap().nlink(), 1);
}
