//! Any archive extracted as `kubectl cp` from a container extracts it
//! (`pod::copy::extract_archive`), into a destination that is absent, empty, full or a
//! file, between sibling directories: nothing outside the destination is created,
//! written, removed or linked, the destination never becomes a symlink, and every symlink
//! left under it resolves under it (the model in `fuzz/model/extract_model.rs`). The first
//! byte picks raw bytes as the archive or entries built from the rest (names and link
//! targets made of `.`, `..`, empty and the siblings' names).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../model/extract_model.rs"]
mod extract_model;

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("tar_extract-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fuzz_target!(|data: &[u8]| {
    extract_model::Case::from_bytes(data).check(scratch());
});
