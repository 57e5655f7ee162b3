//! Any bytes as a tar archive (what a container's `tar cf -` sends to `kubectl cp`): reading
//! gives entries or a typed error, never a panic nor an allocation beyond the metadata bound;
//! an entry's data never exceeds its size; and what was read, written again with our writer,
//! reads back the same (names, kinds, modes, times, link targets, data).
#![no_main]

use std::io::Read;

use kube_informer::pod::tar::{Entry, EntryKind, TarReader, TarWriter};
use libfuzzer_sys::fuzz_target;

fn read_all(data: &[u8]) -> (Vec<(Entry, Vec<u8>)>, bool) {
    let mut r = TarReader::new(data);
    let mut out = Vec::new();
    loop {
        match r.next_entry() {
            Ok(Some(e)) => {
                assert!(e.mode <= 0o7777);
                let mut body = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    match r.read_data(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => body.extend_from_slice(&buf[..n]),
                        Err(_) => return (out, false),
                    }
                }
                assert_eq!(body.len() as u64, e.size);
                out.push((e, body));
            }
            Ok(None) => return (out, true),
            Err(_) => return (out, false),
        }
    }
}

fn comparable(e: &Entry) -> (String, EntryKind, u32, i64, String) {
    let path = match e.kind {
        EntryKind::Directory => e.path.trim_end_matches('/').to_owned(),
        _ => e.path.clone(),
    };
    let mode = if e.kind == EntryKind::Symlink {
        0
    } else {
        e.mode
    };
    (
        path,
        e.kind,
        mode,
        e.mtime.clamp(0, 0o77777777777),
        e.link.clone(),
    )
}

fuzz_target!(|data: &[u8]| {
    let (entries, complete) = read_all(data);
    // The `Read` interface agrees with `read_data`.
    let mut r = TarReader::new(data);
    while let Ok(Some(_)) = r.next_entry() {
        let mut sink = Vec::new();
        if r.read_to_end(&mut sink).is_err() {
            break;
        }
    }
    if !complete {
        return;
    }
    let writable = entries.iter().all(|(e, _)| {
        matches!(
            e.kind,
            EntryKind::File | EntryKind::Directory | EntryKind::Symlink
        ) && !e.path.contains('\0')
            && !e.link.contains('\0')
    });
    if !writable {
        return;
    }
    let mut w = TarWriter::new(Vec::new());
    for (e, body) in &entries {
        match e.kind {
            EntryKind::File => w
                .append_file(&e.path, e.mode, e.mtime, body.len() as u64, &body[..])
                .unwrap(),
            EntryKind::Directory => w.append_dir(&e.path, e.mode, e.mtime).unwrap(),
            _ => w.append_symlink(&e.path, &e.link, e.mtime).unwrap(),
        }
    }
    w.finish().unwrap();
    let again = w.into_inner();
    let (reread, complete) = read_all(&again);
    assert!(complete);
    assert_eq!(reread.len(), entries.len());
    for ((a, ab), (b, bb)) in entries.iter().zip(&reread) {
        assert_eq!(comparable(a), comparable(b));
        assert_eq!(ab, bb);
    }
});
