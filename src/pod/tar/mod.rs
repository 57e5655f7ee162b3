//! The tar format, as `kubectl cp` speaks it with a container's `tar`: a streaming
//! [`TarReader`] and [`TarWriter`] of our own (no dependency: the format is small).
//!
//! What is read: POSIX ustar headers (512-byte blocks, octal fields, the `prefix` field for
//! names up to 256 bytes), GNU tar's long names and link names (`././@LongLink`, types `L`
//! and `K`), PAX extended headers (`x`: the `path`, `linkpath`, `size` and `mtime` records;
//! `g` global headers are skipped), GNU base-256 numbers (sizes of 8 GiB and more), and the
//! checksum both as unsigned and as signed sums (old tars). What is written: ustar, with a
//! PAX header for a name or link target that does not fit and a size of 8 GiB or more —
//! what GNU tar and busybox tar (the `tar` in most images) both read.
//!
//! Streaming, bounded memory: an entry's data is read (and written) through, never held;
//! only metadata is buffered, and each piece is bounded ([`MAX_METADATA`]). A bad archive —
//! truncated, a bad checksum, a metadata record over the bound, a malformed number or PAX
//! record — is a [`TarError`], never a panic. The reader does not judge paths: extracting
//! safely (no `..`, no absolute name, no symlink out of the destination) is
//! [`Client::copy_from_pod`](crate::Client::copy_from_pod)'s job.

mod read;
mod write;

pub use read::TarReader;
pub use write::{TarWriter, RECORD};

/// The size of a tar block.
pub const BLOCK: usize = 512;

/// The largest GNU long name or PAX extended header read (64 KiB): names are at most
/// `PATH_MAX` (4 KiB) on Linux, so anything longer is not a real archive.
pub const MAX_METADATA: u64 = 64 * 1024;

/// What an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryKind {
    /// A regular file (type `0`, NUL or `7`), followed by its data.
    File,
    /// A directory (type `5`).
    Directory,
    /// A symbolic link (type `2`) to [`Entry::link`].
    Symlink,
    /// A hard link (type `1`) to the earlier entry named [`Entry::link`].
    HardLink,
    /// Anything else (devices, FIFOs, unknown types), by its type byte; its data, if any, is
    /// skipped.
    Other(u8),
}

/// One archive member's header, with long names and PAX records applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The member's name as archived (`tmp/dir/file`; a directory's may end with `/`).
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Bytes of data that follow (0 for all but files).
    pub size: u64,
    /// Permission bits (`0o7777` at most).
    pub mode: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: i64,
    /// A link's target (symlink, hard link); empty otherwise.
    pub link: String,
}

/// A bad archive, or the stream under it failing.
#[derive(Debug)]
#[non_exhaustive]
pub enum TarError {
    /// The archive ended in the middle of a header, of an entry's data, or before its
    /// end-of-archive marker.
    Truncated {
        /// Where: "a header", "the data of tmp/x", "before the end-of-archive marker".
        during: String,
        /// Archive bytes read until then.
        offset: u64,
    },
    /// A header's checksum does not match its bytes.
    Checksum {
        /// The header's offset in the archive.
        offset: u64,
        /// What the header says.
        stored: u64,
        /// What its bytes sum to.
        computed: u64,
    },
    /// A long name or PAX header larger than [`MAX_METADATA`].
    TooLarge {
        /// What: "GNU long name", "PAX header".
        what: &'static str,
        /// The size it claims.
        size: u64,
    },
    /// A field or record that does not parse (a number, a PAX record, a name not UTF-8).
    Malformed {
        /// The header's offset in the archive.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing the stream under the archive failed.
    Io(std::io::Error),
}

impl std::fmt::Display for TarError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TarError::Truncated { during, offset } => {
                write!(f, "tar archive truncated in {during} (after {offset} bytes)")
            }
            TarError::Checksum {
                offset,
                stored,
                computed,
            } => write!(
                f,
                "tar header at byte {offset}: checksum {stored} stored, {computed} computed (not a tar archive, or a corrupted one)"
            ),
            TarError::TooLarge { what, size } => write!(
                f,
                "tar archive: a {what} of {size} bytes (at most {MAX_METADATA} are read)"
            ),
            TarError::Malformed { offset, message } => {
                write!(f, "tar header at byte {offset}: {message}")
            }
            TarError::Io(e) => write!(f, "tar stream: {e}"),
        }
    }
}

impl std::error::Error for TarError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TarError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// The header's checksum: its bytes summed with the checksum field read as spaces
/// (unsigned, and signed as some old tars wrote it).
pub(crate) fn checksums(block: &[u8; BLOCK]) -> (u64, u64) {
    let (mut unsigned, mut signed) = (0u64, 0i64);
    for (i, &b) in block.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    (unsigned, signed as u64)
}

#[cfg(test)]
mod tests;
