use std::io::Read;

use super::*;

fn archive(build: impl FnOnce(&mut TarWriter<Vec<u8>>)) -> Vec<u8> {
    let mut w = TarWriter::new(Vec::new());
    build(&mut w);
    w.finish().unwrap();
    w.into_inner()
}

fn entries(data: &[u8]) -> Result<Vec<(Entry, Vec<u8>)>, TarError> {
    let mut r = TarReader::new(data);
    let mut out = Vec::new();
    while let Some(e) = r.next_entry()? {
        let mut body = Vec::new();
        let mut buf = [0u8; 100];
        loop {
            let n = r.read_data(&mut buf)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
        out.push((e, body));
    }
    Ok(out)
}

#[test]
fn round_trip_keeps_kinds_modes_times_and_long_names() {
    let long_dir = "d".repeat(120);
    let long_name = format!("{long_dir}/{}", "f".repeat(90));
    let very_long = format!("{}/{}", "x".repeat(300), "y".repeat(150));
    let long_target = "t/".repeat(80);
    let data = archive(|w| {
        w.append_dir("top", 0o750, 1234).unwrap();
        w.append_file("top/a", 0o600, 99, 5, &b"hello"[..]).unwrap();
        w.append_file("top/empty", 0o644, 0, 0, &b""[..]).unwrap();
        w.append_file(&long_name, 0o644, 0, 3, &b"abc"[..]).unwrap();
        w.append_file(&very_long, 0o644, 0, 1, &b"z"[..]).unwrap();
        w.append_symlink("top/link", "a", 5).unwrap();
        w.append_symlink("top/far", &long_target, 5).unwrap();
    });
    let got = entries(&data).unwrap();
    let summary: Vec<_> = got
        .iter()
        .map(|(e, b)| {
            (
                e.path.as_str(),
                e.kind,
                e.mode,
                e.mtime,
                e.link.as_str(),
                b.as_slice(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("top/", EntryKind::Directory, 0o750, 1234, "", &b""[..]),
            ("top/a", EntryKind::File, 0o600, 99, "", &b"hello"[..]),
            ("top/empty", EntryKind::File, 0o644, 0, "", &b""[..]),
            (
                long_name.as_str(),
                EntryKind::File,
                0o644,
                0,
                "",
                &b"abc"[..]
            ),
            (very_long.as_str(), EntryKind::File, 0o644, 0, "", &b"z"[..]),
            ("top/link", EntryKind::Symlink, 0o777, 5, "a", &b""[..]),
            (
                "top/far",
                EntryKind::Symlink,
                0o777,
                5,
                long_target.as_str(),
                &b""[..]
            ),
        ]
    );
}

/// A GNU tar header block, as `tar --format=gnu` writes it.
fn gnu_block(name: &[u8], flag: u8, size: u64) -> [u8; BLOCK] {
    let mut b = [0u8; BLOCK];
    b[..name.len()].copy_from_slice(name);
    b[100..108].copy_from_slice(b"0000644\0");
    b[108..116].copy_from_slice(b"0000000\0");
    b[116..124].copy_from_slice(b"0000000\0");
    b[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    b[136..148].copy_from_slice(b"00000000000\0");
    b[156] = flag;
    b[257..265].copy_from_slice(b"ustar  \0");
    let (sum, _) = checksums(&b);
    b[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    b
}

#[test]
fn gnu_long_names_and_links_are_read() {
    let name = format!("{}/file", "n".repeat(200));
    let target = "l".repeat(150);
    let mut data = Vec::new();
    for (flag, text) in [(b'L', &name), (b'K', &target)] {
        let mut body = text.as_bytes().to_vec();
        body.push(0);
        data.extend_from_slice(&gnu_block(b"././@LongLink", flag, body.len() as u64));
        body.resize(body.len().div_ceil(BLOCK) * BLOCK, 0);
        data.extend_from_slice(&body);
    }
    data.extend_from_slice(&gnu_block(b"cut-name", b'2', 0));
    data.extend_from_slice(&[0u8; 2 * BLOCK]);
    let got = entries(&data).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0.path, name);
    assert_eq!(got[0].0.link, target);
    assert_eq!(got[0].0.kind, EntryKind::Symlink);
}

#[test]
fn base256_sizes_are_read() {
    let mut b = gnu_block(b"big", b'0', 0);
    let size: u64 = 9 << 30;
    b[124..136].fill(0);
    b[124] = 0x80;
    b[128..136].copy_from_slice(&size.to_be_bytes());
    let (sum, _) = checksums(&b);
    b[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut r = TarReader::new(&b[..]);
    let e = r.next_entry().unwrap().unwrap();
    assert_eq!(e.size, size);
    // The data is not there: reading it is a truncation, not a panic nor an allocation.
    let mut sink = Vec::new();
    let err = r.read_to_end(&mut sink).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    assert!(matches!(r.next_entry(), Err(TarError::Truncated { .. })));
}

#[test]
fn bad_archives_are_typed_errors() {
    let good = archive(|w| w.append_file("a", 0o644, 0, 600, &[7u8; 600][..]).unwrap());
    // A flipped byte in the header.
    let mut bad = good.clone();
    bad[10] ^= 1;
    assert!(matches!(
        entries(&bad),
        Err(TarError::Checksum { offset: 0, .. })
    ));
    // Cut anywhere before the end marker.
    for cut in [0, 100, 512, 700, 1024, 1535] {
        let e = entries(&good[..cut]).unwrap_err();
        assert!(matches!(e, TarError::Truncated { .. }), "{cut}: {e}");
    }
    // One zero block at the end of the stream is accepted (GNU tar does).
    assert_eq!(entries(&good[..512 + 1024 + BLOCK]).unwrap().len(), 1);
    // A long name claiming a gigabyte.
    let huge = gnu_block(b"././@LongLink", b'L', 1 << 30);
    assert!(matches!(
        entries(&huge),
        Err(TarError::TooLarge { size, .. }) if size == 1 << 30
    ));
    // A garbage numeric field.
    let mut b = gnu_block(b"x", b'0', 0);
    b[124..136].copy_from_slice(b"12345678zz1\0");
    let (sum, _) = checksums(&b);
    b[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    assert!(matches!(entries(&b), Err(TarError::Malformed { .. })));
    // A PAX record whose length lies.
    let mut data = gnu_block(b"pax", b'x', 12).to_vec();
    let mut rec = b"99 path=abc\n".to_vec();
    rec.resize(BLOCK, 0);
    data.extend_from_slice(&rec);
    assert!(matches!(entries(&data), Err(TarError::Malformed { .. })));
}
