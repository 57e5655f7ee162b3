//! Issue 31 (copy): `kubectl cp`-style copy to and from a container over exec with tar,
//! against the test server's in-memory container filesystem (`testing::ContainerFiles`),
//! plus crafted archives a hostile container could send.

use std::fs;
use std::path::Path;

use kube_informer::pod::tar::{TarError, TarWriter};
use kube_informer::pod::{CopyError, CopyOptions, CopyReport, ExitStatus, PodError};
use kube_informer::testing::{ApiServer, CommandOutput, ContainerFiles};
use kube_informer::{Client, Error};

fn setup() -> (ApiServer, Client, ContainerFiles) {
    setup_pod("web", &["app"])
}

/// A pod `lab/<pod>` whose containers share one in-memory filesystem.
fn setup_pod(pod: &str, containers: &[&str]) -> (ApiServer, Client, ContainerFiles) {
    let server = ApiServer::start();
    server.create_pod("lab", pod, containers).unwrap();
    let files = ContainerFiles::new();
    files.serve(server.runtime());
    let client = Client::new(server.client_config()).unwrap();
    (server, client, files)
}

/// `kubectl cp lab/web:<remote> <local>`.
fn from_web(
    c: &Client,
    remote: &str,
    local: impl AsRef<Path>,
    o: &CopyOptions,
) -> Result<CopyReport, CopyError> {
    c.copy_from_pod("lab", "web", remote, local, o)
}

/// `kubectl cp <local> lab/web:<remote>`.
fn to_web(
    c: &Client,
    local: impl AsRef<Path>,
    remote: &str,
    o: &CopyOptions,
) -> Result<CopyReport, CopyError> {
    c.copy_to_pod("lab", "web", local, remote, o)
}

/// Bytes that are not all the same (a shifted block would show).
fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[cfg(unix)]
fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_directory_round_trips_with_long_names_symlinks_empty_files_and_modes() {
    let (_server, client, files) = setup();
    let long_dir = "d".repeat(150);
    let long_file = format!("{}.txt", "f".repeat(120));
    files.write_file("/data/a.txt", 0o640, b"alpha\n");
    files.write_file("/data/empty", 0o600, b"");
    files.create_dir("/data/nothing-inside", 0o750);
    files.write_file(&format!("/data/{long_dir}/{long_file}"), 0o644, b"long\n");
    files.write_file("/data/bin/run.sh", 0o755, b"#!/bin/sh\n");
    files.symlink("/data/latest", "a.txt");
    files.symlink("/data/bin/up", "../a.txt");

    let local = tempfile::tempdir().unwrap();
    let out = local.path().join("copy");
    let report = from_web(&client, "/data", &out, &CopyOptions::new()).unwrap();
    assert_eq!(report.files, 4, "{report:?}");
    assert_eq!(report.symlinks, 2);
    assert_eq!(report.bytes, 6 + 5 + 10);
    assert!(report.archive_bytes >= 10240);
    assert_eq!(report.stderr, "", "the leading-/ note is not a warning");
    assert_eq!(fs::read(out.join("a.txt")).unwrap(), b"alpha\n");
    assert_eq!(fs::read(out.join("empty")).unwrap(), b"");
    assert!(out.join("nothing-inside").is_dir());
    assert_eq!(
        fs::read(out.join(&long_dir).join(&long_file)).unwrap(),
        b"long\n"
    );
    assert_eq!(
        fs::read_link(out.join("bin/up")).unwrap(),
        Path::new("../a.txt")
    );
    assert_eq!(fs::read(out.join("latest")).unwrap(), b"alpha\n");
    #[cfg(unix)]
    {
        assert_eq!(mode_of(&out.join("a.txt")), 0o640);
        assert_eq!(mode_of(&out.join("bin/run.sh")), 0o755);
        assert_eq!(mode_of(&out.join("nothing-inside")), 0o750);
    }
    let mtime = fs::metadata(out.join("a.txt")).unwrap().modified().unwrap();
    assert_eq!(
        mtime
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
        1_700_000_000
    );

    // And back in, to a directory that exists: under its own name there.
    files.create_dir("/restore", 0o755);
    let report = to_web(&client, &out, "/restore", &CopyOptions::new()).unwrap();
    assert_eq!((report.files, report.symlinks), (4, 2));
    assert_eq!(report.directories, 4);
    assert_eq!(
        files.read_file("/restore/copy/a.txt").as_deref(),
        Some(&b"alpha\n"[..])
    );
    assert_eq!(
        files
            .read_file(&format!("/restore/copy/{long_dir}/{long_file}"))
            .as_deref(),
        Some(&b"long\n"[..])
    );
    assert_eq!(
        files.read_file("/restore/copy/empty").as_deref(),
        Some(&b""[..])
    );
    assert!(files.is_dir("/restore/copy/nothing-inside"));
    assert_eq!(
        files.link_target("/restore/copy/bin/up").as_deref(),
        Some("../a.txt")
    );
    #[cfg(unix)]
    assert_eq!(files.mode("/restore/copy/bin/run.sh"), Some(0o755));
}

#[test]
fn a_single_file_lands_at_the_path_or_in_a_directory_under_its_name() {
    let (_server, client, files) = setup();
    files.write_file("/etc/app.conf", 0o644, b"port = 80\n");
    let local = tempfile::tempdir().unwrap();
    let o = CopyOptions::new();
    from_web(&client, "/etc/app.conf", local.path().join("renamed"), &o).unwrap();
    assert_eq!(
        fs::read(local.path().join("renamed")).unwrap(),
        b"port = 80\n"
    );
    from_web(&client, "/etc/app.conf", local.path(), &o).unwrap();
    assert_eq!(
        fs::read(local.path().join("app.conf")).unwrap(),
        b"port = 80\n"
    );
    // Into the container: to a new name (no directory there), then into a directory.
    to_web(&client, local.path().join("renamed"), "/etc/other.conf", &o).unwrap();
    assert_eq!(
        files.read_file("/etc/other.conf").as_deref(),
        Some(&b"port = 80\n"[..])
    );
    to_web(&client, local.path().join("renamed"), "/etc/", &o).unwrap();
    assert!(files.read_file("/etc/renamed").is_some());
    // The archived mode, unless --no-preserve.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let script = local.path().join("run.sh");
        fs::write(&script, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o777)).unwrap();
        to_web(&client, &script, "/etc/kept.sh", &o).unwrap();
        assert_eq!(files.mode("/etc/kept.sh"), Some(0o777));
        to_web(
            &client,
            &script,
            "/etc/plain.sh",
            &o.clone().no_preserve(true),
        )
        .unwrap();
        assert_eq!(files.mode("/etc/plain.sh"), Some(0o755));
    }
}

#[test]
fn a_large_file_streams_both_ways() {
    let (_server, client, files) = setup();
    let big = pattern(12 * 1024 * 1024 + 123, 7);
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("big.bin");
    fs::write(&src, &big).unwrap();
    files.create_dir("/tmp", 0o777);
    let up = to_web(&client, &src, "/tmp", &CopyOptions::new()).unwrap();
    assert_eq!(up.bytes, big.len() as u64);
    assert_eq!(up.archive_bytes % 10240, 0);
    assert!(files.read_file("/tmp/big.bin").unwrap() == big);
    let back = local.path().join("back.bin");
    let down = from_web(&client, "/tmp/big.bin", &back, &CopyOptions::new()).unwrap();
    assert_eq!(down.bytes, big.len() as u64);
    assert!(fs::read(&back).unwrap() == big);
}

/// A server whose `tar` answers with `archive`, whatever is asked.
fn hostile(archive: Vec<u8>) -> (ApiServer, Client) {
    let server = ApiServer::start();
    server.create_pod("lab", "web", &["app"]).unwrap();
    server.runtime().command(&["tar"], move |_| CommandOutput {
        stdout: archive.clone(),
        ..Default::default()
    });
    let client = Client::new(server.client_config()).unwrap();
    (server, client)
}

fn crafted(build: impl FnOnce(&mut TarWriter<Vec<u8>>)) -> Vec<u8> {
    let mut w = TarWriter::new(Vec::new());
    build(&mut w);
    w.finish().unwrap();
    w.into_inner()
}

#[test]
fn names_and_links_leaving_the_destination_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let dest = root.path().join("dest");
    let o = CopyOptions::new();
    let copy = |archive: Vec<u8>, o: &CopyOptions| {
        let (_s, c) = hostile(archive);
        from_web(&c, "/x", &dest, o)
    };

    let e = copy(
        crafted(|w| {
            w.append_file("x/../../evil", 0o644, 0, 1, &b"!"[..])
                .unwrap()
        }),
        &o,
    )
    .unwrap_err();
    assert!(
        matches!(&e, CopyError::PathEscape { entry } if entry == "x/../../evil"),
        "{e}"
    );
    assert!(!root.path().join("evil").exists());

    let e = copy(
        crafted(|w| w.append_file("etc/passwd", 0o644, 0, 1, &b"!"[..]).unwrap()),
        &o,
    )
    .unwrap_err();
    assert!(
        matches!(&e, CopyError::Corrupted { expected_prefix, .. } if expected_prefix == "x"),
        "{e}"
    );
    assert!(e.to_string().contains("tar contents corrupted"));

    // Prefix "": an absolute name.
    let (_s, c) = hostile(crafted(|w| {
        w.append_file("/abs", 0o644, 0, 1, &b"!"[..]).unwrap()
    }));
    let e = from_web(&c, "/", &dest, &o).unwrap_err();
    assert!(matches!(&e, CopyError::PathEscape { .. }), "{e}");

    for target in ["/etc/passwd", "../../outside", "sub/../../.."] {
        let archive = crafted(|w| {
            w.append_dir("x", 0o755, 0).unwrap();
            w.append_symlink("x/link", target, 0).unwrap();
        });
        let e = copy(archive.clone(), &o).unwrap_err();
        assert!(
            matches!(&e, CopyError::SymlinkEscape { target: t, .. } if t == target),
            "{target}: {e}"
        );
        assert!(fs::symlink_metadata(dest.join("link")).is_err());
        // Told to skip them: listed, not created.
        let report = copy(archive, &o.clone().skip_escaping_symlinks(true)).unwrap();
        assert_eq!(report.symlinks, 0);
        assert!(report.skipped[0].contains(target), "{:?}", report.skipped);
        assert!(fs::symlink_metadata(dest.join("link")).is_err());
    }

    // A link inside, then a file written through it.
    let _ = fs::remove_dir_all(&dest);
    let e = copy(
        crafted(|w| {
            w.append_symlink("x/here", ".", 0).unwrap();
            w.append_file("x/here/f", 0o644, 0, 1, &b"!"[..]).unwrap();
        }),
        &o,
    )
    .unwrap_err();
    assert!(
        matches!(&e, CopyError::ThroughSymlink { entry, .. } if entry == "x/here/f"),
        "{e}"
    );
}

/// What follows the end-of-archive marker is not the archive (kubectl stops reading at the
/// marker): a container that keeps sending after it does not keep the copy reading; the
/// copy is complete and succeeds, and at most about 1 MiB more is read.
#[test]
fn bytes_after_the_end_of_the_archive_are_not_read_on_and_on() {
    let root = tempfile::tempdir().unwrap();
    let mut archive = crafted(|w| {
        w.append_file("x", 0o644, 0, 5, &b"hello"[..]).unwrap();
    });
    let end = archive.len() as u64;
    archive.extend(std::iter::repeat_n(b'!', 16 * 1024 * 1024));
    let (_s, c) = hostile(archive);
    let dest = root.path().join("x");
    let report = c
        .copy_from_pod("lab", "web", "/x", &dest, &CopyOptions::new())
        .unwrap();
    assert_eq!(fs::read(&dest).unwrap(), b"hello");
    assert_eq!(report.files, 1);
    assert!(
        report.archive_bytes <= end + 1024 * 1024 + 8 * 1024,
        "read {} bytes of a {end}-byte archive",
        report.archive_bytes
    );
    // Zeros after the marker (a tar padding its record) and then the exit status: read to
    // the end, and a failing status still fails the copy.
    let mut archive = crafted(|w| {
        w.append_file("x", 0o644, 0, 5, &b"hello"[..]).unwrap();
    });
    archive.extend([0u8; 64 * 1024]);
    let server = ApiServer::start();
    server.create_pod("lab", "web", &["app"]).unwrap();
    server.runtime().command(&["tar"], move |_| CommandOutput {
        stdout: archive.clone(),
        stderr: b"tar: /x/y: Cannot open: Permission denied\n".to_vec(),
        exit_code: 2,
    });
    let c = Client::new(server.client_config()).unwrap();
    let e = c
        .copy_from_pod(
            "lab",
            "web",
            "/x",
            root.path().join("y"),
            &CopyOptions::new(),
        )
        .unwrap_err();
    assert!(
        matches!(&e, CopyError::Command { stderr, .. } if stderr.contains("Cannot open")),
        "{e}"
    );
}

#[test]
fn a_broken_archive_is_a_typed_error() {
    let root = tempfile::tempdir().unwrap();
    let mut archive = crafted(|w| {
        w.append_file("x", 0o644, 0, 5000, &[1u8; 5000][..])
            .unwrap()
    });
    archive.truncate(3000);
    let (_s, c) = hostile(archive);
    let e = from_web(&c, "/x", root.path().join("x"), &CopyOptions::new()).unwrap_err();
    assert!(
        matches!(&e, CopyError::Archive(TarError::Truncated { .. })),
        "{e}"
    );
    let (_s, c) = hostile(b"this is not a tar archive".repeat(100));
    let e = from_web(&c, "/x", root.path().join("x"), &CopyOptions::new()).unwrap_err();
    assert!(
        matches!(&e, CopyError::Archive(TarError::Malformed { message, .. }) if message.starts_with("not a tar header")),
        "{e}"
    );
    // Text with a plausible checksum field but the wrong sum.
    let mut block = b"not a tar archive at all".repeat(30);
    block[148..156].copy_from_slice(b"0001234\0");
    let (_s, c) = hostile(block);
    let e = from_web(&c, "/x", root.path().join("x"), &CopyOptions::new()).unwrap_err();
    assert!(
        matches!(&e, CopyError::Archive(TarError::Checksum { .. })),
        "{e}"
    );
}

#[test]
fn no_tar_in_the_image_gives_kubectls_hint() {
    let server = ApiServer::start();
    server.create_pod("lab", "web", &["app"]).unwrap();
    let client = Client::new(server.client_config()).unwrap();
    let local = tempfile::tempdir().unwrap();
    let e = from_web(
        &client,
        "/etc/hosts",
        local.path().join("h"),
        &CopyOptions::new(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, CopyError::ToolMissing { tool, .. } if tool == "tar"),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("requires that the 'tar' binary is present in your container image"),
        "{e}"
    );
    fs::write(local.path().join("f"), "x").unwrap();
    let e = to_web(
        &client,
        local.path().join("f"),
        "/tmp/f",
        &CopyOptions::new(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, CopyError::ToolMissing { tool, .. } if tool == "tar"),
        "{e}"
    );
}

#[test]
fn a_failing_command_says_its_exit_code_and_stderr() {
    let (_server, client, files) = setup();
    let local = tempfile::tempdir().unwrap();
    let e = from_web(
        &client,
        "/nope",
        local.path().join("n"),
        &CopyOptions::new(),
    )
    .unwrap_err();
    match &e {
        CopyError::Command { status, stderr, .. } => {
            assert_eq!(*status, ExitStatus::Code(2));
            assert!(stderr.contains("/nope: Cannot stat: No such file or directory"));
            assert!(!stderr.contains("Removing leading"));
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("exited with code 2"), "{e}");
    // Into a directory that does not exist.
    fs::write(local.path().join("f"), "x").unwrap();
    let e = to_web(
        &client,
        local.path().join("f"),
        "/no/such/f",
        &CopyOptions::new(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, CopyError::Command { stderr, .. } if stderr.contains("Cannot open")),
        "{e}"
    );
    // A local source that does not exist: kubectl's words.
    let e = to_web(
        &client,
        local.path().join("missing"),
        "/tmp",
        &CopyOptions::new(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("missing doesn't exist in local filesystem"),
        "{e}"
    );
    assert!(files.read_file("/tmp/missing").is_none());
}

#[test]
fn a_dropped_stream_is_resumed_with_retries() {
    let (server, client, files) = setup();
    let data = pattern(3 * 1024 * 1024, 3);
    files.write_file("/var/dump.bin", 0o644, &data);
    let local = tempfile::tempdir().unwrap();
    // Without retries the drop is the copy's failure.
    server.runtime().drop_streams(1);
    let e = from_web(
        &client,
        "/var/dump.bin",
        local.path().join("a"),
        &CopyOptions::new(),
    )
    .unwrap_err();
    assert!(matches!(&e, CopyError::Exec(Error::Io { .. })), "{e}");
    // With them, the next session carries on.
    server.runtime().drop_streams(2);
    let report = from_web(
        &client,
        "/var/dump.bin",
        local.path().join("b"),
        &CopyOptions::new().retries(3),
    )
    .unwrap();
    assert_eq!(report.retries, 2);
    assert!(fs::read(local.path().join("b")).unwrap() == data);
    // Cut part way, twice: each session resumes where the last one stopped.
    server.runtime().cut_streams(2, 1_000_003);
    let report = from_web(
        &client,
        "/var/dump.bin",
        local.path().join("c"),
        &CopyOptions::new().retries(2),
    )
    .unwrap();
    assert_eq!(report.retries, 2);
    assert!(fs::read(local.path().join("c")).unwrap() == data);
    assert_eq!(
        report.archive_bytes,
        (512 + data.len() as u64).div_ceil(10240) * 10240
    );
    // Out of retries: the copy fails with the drop.
    server.runtime().cut_streams(2, 1_000_003);
    let e = from_web(
        &client,
        "/var/dump.bin",
        local.path().join("d"),
        &CopyOptions::new().retries(1),
    )
    .unwrap_err();
    assert!(matches!(&e, CopyError::Exec(Error::Io { .. })), "{e}");
}

#[test]
fn the_container_is_named_as_kubectl_c() {
    let (_server, client, files) = setup_pod("two", &["app", "sidecar"]);
    files.write_file("/f", 0o644, b"x");
    let local = tempfile::tempdir().unwrap();
    let e = client
        .copy_from_pod(
            "lab",
            "two",
            "/f",
            local.path().join("f"),
            &CopyOptions::new(),
        )
        .unwrap_err();
    match &e {
        CopyError::Exec(err) => {
            assert_eq!(err.code(), Some(400), "{err}");
            assert!(
                matches!(err.pod_error(), Some(PodError::ContainerRequired { containers, .. }) if containers == &["app", "sidecar"]),
                "{err}"
            );
        }
        other => panic!("{other}"),
    }
    client
        .copy_from_pod(
            "lab",
            "two",
            "/f",
            local.path().join("f"),
            &CopyOptions::new().container("sidecar"),
        )
        .unwrap();
    assert_eq!(fs::read(local.path().join("f")).unwrap(), b"x");
}

/// What `root` holds, every level, without following symlinks: (path, what, content).
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
            if m.file_type().is_symlink() {
                out.push((rel, format!("-> {:?}", fs::read_link(&p).unwrap())));
            } else if m.is_dir() {
                out.push((rel, "dir".into()));
                walk(&p, root, out);
            } else {
                out.push((rel, format!("{:?}", fs::read(&p).unwrap())));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// A root with `out` (not there yet: the copy creates it) between two siblings, `home`
/// (holding `.ssh/authorized_keys`) and `side`.
fn siblings() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir_all(root.path().join("home/.ssh")).unwrap();
    fs::write(root.path().join("home/.ssh/authorized_keys"), b"mine\n").unwrap();
    fs::create_dir(root.path().join("side")).unwrap();
    root
}

/// Nothing outside `root/out` differs from `before`, and `out`, if there, is a directory
/// or a file, never a symlink.
fn nothing_outside(root: &Path, before: &[(String, String)]) {
    let after: Vec<_> = snapshot(root)
        .into_iter()
        .filter(|(p, _)| p != "out" && !p.starts_with("out/"))
        .collect();
    assert_eq!(after, before, "something changed outside the destination");
    if let Ok(m) = fs::symlink_metadata(root.join("out")) {
        assert!(
            !m.file_type().is_symlink(),
            "the destination became a symlink"
        );
    }
}

#[test]
fn the_copied_path_itself_as_a_symlink_never_redirects_the_destination() {
    for (remote, root_name) in [("/x", "x"), ("/", "."), ("/", "./"), ("/", "")] {
        for target in [".", "side", "home/.ssh", "out"] {
            let below = |n: &str| {
                if root_name.is_empty() || root_name.starts_with('.') {
                    n.to_owned()
                } else {
                    format!("{root_name}/{n}")
                }
            };
            let archive = crafted(|w| {
                w.append_symlink(root_name, target, 0).unwrap();
                w.append_file(&below("evil"), 0o644, 0, 1, &b"!"[..])
                    .unwrap();
                w.append_file(&below("authorized_keys"), 0o644, 0, 5, &b"evil\n"[..])
                    .unwrap();
            });
            for skip in [false, true] {
                let root = siblings();
                let before = snapshot(root.path());
                let (_s, c) = hostile(archive.clone());
                let o = CopyOptions::new().skip_escaping_symlinks(skip);
                let got = from_web(&c, remote, root.path().join("out"), &o);
                nothing_outside(root.path(), &before);
                let case = format!("{remote} {root_name:?} -> {target:?}, skip {skip}");
                match got {
                    Err(e) => {
                        assert!(!skip, "{case}: {e}");
                        assert!(matches!(&e, CopyError::SymlinkEscape { .. }), "{case}: {e}");
                    }
                    Ok(report) => {
                        assert!(skip, "{case}: {report:?}");
                        assert_eq!(report.symlinks, 0, "{case}");
                        assert!(
                            report.skipped[0].contains("outside the destination"),
                            "{case}: {:?}",
                            report.skipped
                        );
                        assert_eq!(fs::read(root.path().join("out/evil")).unwrap(), b"!");
                    }
                }
            }
        }
    }
}

#[test]
fn hard_links_only_to_regular_files_inside() {
    let root = siblings();
    let before = snapshot(root.path());
    let dest = root.path().join("out");
    let copy = |archive: Vec<u8>, o: &CopyOptions| {
        let (_s, c) = hostile(archive);
        from_web(&c, "/x", &dest, o)
    };
    // A symlink that stays inside (`x/a/l` -> `../outside` is `out/outside`), linked one
    // level higher, would point to `root/outside`; with more `..`, anywhere.
    for skip in [false, true] {
        let _ = fs::remove_dir_all(&dest);
        let o = CopyOptions::new().skip_escaping_symlinks(skip);
        let e = copy(
            crafted(|w| {
                w.append_dir("x", 0o755, 0).unwrap();
                w.append_dir("x/a", 0o755, 0).unwrap();
                w.append_dir("x/a/b", 0o755, 0).unwrap();
                w.append_symlink("x/a/b/l", "../../home/.ssh", 0).unwrap();
                w.append_hard_link("x/h", "x/a/b/l", 0).unwrap();
                w.append_file("x/h/authorized_keys", 0o644, 0, 5, &b"evil\n"[..])
                    .unwrap();
            }),
            &o,
        )
        .unwrap_err();
        assert!(
            matches!(&e, CopyError::HardLinkTarget { entry, target } if entry == "x/h" && target == "x/a/b/l"),
            "{e}"
        );
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(fs::symlink_metadata(dest.join("h")).is_err());
        nothing_outside(root.path(), &before);
    }
    // To a directory, to nothing, to the destination (a file) itself.
    for (target, first_dir) in [("x/a", true), ("x/nothing", true), ("x", false)] {
        let _ = fs::remove_dir_all(&dest);
        let _ = fs::remove_file(&dest);
        let e = copy(
            crafted(|w| {
                if first_dir {
                    w.append_dir("x", 0o755, 0).unwrap();
                    w.append_dir("x/a", 0o755, 0).unwrap();
                } else {
                    w.append_file("x", 0o644, 0, 1, &b"1"[..]).unwrap();
                }
                w.append_hard_link("x", target, 0).unwrap();
            }),
            &CopyOptions::new(),
        )
        .unwrap_err();
        assert!(
            matches!(&e, CopyError::HardLinkTarget { .. }),
            "{target}: {e}"
        );
        nothing_outside(root.path(), &before);
    }
    // To a regular file: the same file under two names.
    let _ = fs::remove_file(&dest);
    let report = copy(
        crafted(|w| {
            w.append_dir("x", 0o755, 0).unwrap();
            w.append_file("x/f", 0o644, 0, 3, &b"one"[..]).unwrap();
            w.append_dir("x/d", 0o755, 0).unwrap();
            w.append_hard_link("x/d/g", "x/f", 0).unwrap();
        }),
        &CopyOptions::new(),
    )
    .unwrap();
    assert_eq!((report.files, report.hard_links), (1, 1));
    assert_eq!(fs::read(dest.join("d/g")).unwrap(), b"one");
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (f, g) = (
            fs::metadata(dest.join("f")).unwrap(),
            fs::metadata(dest.join("d/g")).unwrap(),
        );
        assert_eq!((f.dev(), f.ino()), (g.dev(), g.ino()));
    }
    nothing_outside(root.path(), &before);
}

#[cfg(unix)]
#[path = "../fuzz/model/extract_model.rs"]
mod extract_model;

/// The `tar_extract` fuzz target's model ("nothing outside") over seeded archives: names
/// and links made of `.`, `..`, empty names and the siblings' names, into a destination
/// absent, empty, full or a file. More: `cargo fuzz run -s none tar_extract` in `fuzz/`.
#[cfg(unix)]
#[test]
fn nothing_is_written_linked_or_followed_outside_the_destination_whatever_the_archive() {
    let scratch = tempfile::tempdir().unwrap();
    let seeds: u32 = std::env::var("EXTRACT_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    for seed in 0..seeds {
        let mut bytes = pattern(8 + (seed as usize % 120), seed.wrapping_mul(2654435761));
        bytes[0] &= !1; // entries built by the writer, not raw bytes
        let case = extract_model::Case::from_bytes(&bytes);
        let checked = std::panic::catch_unwind(|| case.check(scratch.path()));
        assert!(checked.is_ok(), "seed {seed}: {bytes:?}");
    }
}

#[cfg(unix)]
#[test]
fn a_destination_the_user_named_as_a_symlink_is_followed_and_files_are_created_anew() {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir(root.path().join("real")).unwrap();
    std::os::unix::fs::symlink("real", root.path().join("out")).unwrap();
    let (_s, c) = hostile(crafted(|w| {
        w.append_dir("x", 0o755, 0).unwrap();
        w.append_file("x/f", 0o644, 0, 3, &b"one"[..]).unwrap();
        w.append_hard_link("x/g", "x/f", 0).unwrap();
        // Written again: a new file, never through the other name.
        w.append_file("x/g", 0o644, 0, 3, &b"two"[..]).unwrap();
    }));
    let report = from_web(&c, "/x", root.path().join("out"), &CopyOptions::new()).unwrap();
    assert_eq!((report.files, report.hard_links), (2, 1));
    assert!(fs::symlink_metadata(root.path().join("out"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(root.path().join("real/f")).unwrap(), b"one");
    assert_eq!(fs::read(root.path().join("real/g")).unwrap(), b"two");
}

/// Issue 38: an upload to a `tar -x` that prints nothing is not cut by the client's request
/// timeout (it bounds the upgrade only) nor by the idle timeout while the bytes move; here
/// the server stops taking them for longer than the request timeout, then takes the rest.
#[test]
fn a_slow_upload_is_not_cut_by_the_request_timeout() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    const SIZE: usize = 16 << 20;
    const PAUSE_AFTER: usize = 256 * 1024;
    let server = ApiServer::start();
    server.create_pod("lab", "web", &["app"]).unwrap();
    let files = ContainerFiles::new();
    files.create_dir("/srv", 0o755);
    files.serve(server.runtime());
    // A relay that, on a connection that has sent PAUSE_AFTER bytes towards the server,
    // stops reading for a while (a busy node or disk), then goes on at full speed.
    let upstream = server.addr();
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut cfg = server.client_config();
    cfg.server = format!("http://{}", relay.local_addr().unwrap());
    cfg.request_timeout = Duration::from_secs(2);
    std::thread::spawn(move || {
        for c in relay.incoming() {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let Ok(mut up) = TcpStream::connect(upstream) else {
                    return;
                };
                let (mut c2, mut up2) = (c.try_clone().unwrap(), up.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut up2, &mut c2);
                    let _ = c2.shutdown(std::net::Shutdown::Both);
                });
                let (mut sent, mut paused) = (0usize, false);
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if up.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    sent += n;
                    if sent >= PAUSE_AFTER && !paused {
                        paused = true;
                        // Well past the request timeout, well short of the idle timeout.
                        std::thread::sleep(Duration::from_secs(5));
                    }
                }
                let _ = up.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    let client = Client::new(cfg).unwrap();
    let local = tempfile::tempdir().unwrap();
    let data = pattern(SIZE, 38);
    fs::write(local.path().join("big.bin"), &data).unwrap();
    let options = CopyOptions::new().idle_timeout(Duration::from_secs(15));
    to_web(
        &client,
        local.path().join("big.bin"),
        "/srv/big.bin",
        &options,
    )
    .unwrap();
    assert!(files.read_file("/srv/big.bin").unwrap() == data);
}
