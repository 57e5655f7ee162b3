//! Writing an archive as a stream: a header, then the entry's data copied through.

use std::io::{self, Read, Write};

use super::{checksums, BLOCK};

/// tar's record size: GNU tar's default blocking factor of 20 blocks.
pub const RECORD: u64 = 10240;

/// The largest size an octal size field holds (11 digits): 8 GiB - 1.
const MAX_OCTAL_SIZE: u64 = 0o77777777777;

/// Writes a tar stream: ustar headers, a PAX header before an entry whose name or link
/// target does not fit ustar's fields or whose size is 8 GiB or more. File data is copied
/// from a reader in blocks, never held whole.
///
/// ```
/// use kube_informer::pod::tar::TarWriter;
///
/// let mut w = TarWriter::new(Vec::new());
/// w.append_dir("logs", 0o755, 1_700_000_000)?;
/// w.append_file("logs/today.txt", 0o640, 1_700_000_000, 3, &b"ok\n"[..])?;
/// w.append_symlink("logs/latest", "today.txt", 1_700_000_000)?;
/// w.finish()?;
/// let archive = w.into_inner();
/// assert_eq!(archive.len(), 10240); // one record
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TarWriter<W: Write> {
    inner: W,
    /// Archive bytes written.
    written: u64,
}

impl<W: Write> TarWriter<W> {
    /// Writes the archive to `inner` (buffer it if each write is costly: headers are
    /// written a block at a time).
    pub fn new(inner: W) -> Self {
        TarWriter { inner, written: 0 }
    }

    /// Archive bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// A directory (its name gets a trailing `/`).
    pub fn append_dir(&mut self, path: &str, mode: u32, mtime: i64) -> io::Result<()> {
        let mut name = path.trim_end_matches('/').to_owned();
        name.push('/');
        self.header(&name, b'5', mode, mtime, 0, "")
    }

    /// A symbolic link at `path` pointing to `target`.
    pub fn append_symlink(&mut self, path: &str, target: &str, mtime: i64) -> io::Result<()> {
        self.header(path, b'2', 0o777, mtime, 0, target)
    }

    /// A hard link at `path` to the earlier entry named `target` (an archived name, as
    /// tar writes one for a file's second name; the library's own copies never do).
    pub fn append_hard_link(&mut self, path: &str, target: &str, mtime: i64) -> io::Result<()> {
        self.header(path, b'1', 0o644, mtime, 0, target)
    }

    /// A regular file of exactly `size` bytes read from `data`. A reader that ends early
    /// is an error (`UnexpectedEof`: the file shrank while archived) and leaves the archive
    /// unusable; bytes past `size` are not read (the file grew: what was there when it was
    /// measured is archived).
    pub fn append_file(
        &mut self,
        path: &str,
        mode: u32,
        mtime: i64,
        size: u64,
        mut data: impl Read,
    ) -> io::Result<()> {
        self.header(path, b'0', mode, mtime, size, "")?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut left = size;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = match data.read(&mut buf[..want]) {
                Ok(0) => {
                    let m = format!(
                        "{path} ended after {} of its {size} bytes (it shrank while being copied)",
                        size - left
                    );
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, m));
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.inner.write_all(&buf[..n])?;
            self.written += n as u64;
            left -= n as u64;
        }
        self.pad(size)
    }

    /// Writes the end-of-archive marker (two zero blocks), pads the archive to tar's record
    /// size ([`RECORD`]: a reader that reads whole records, as GNU tar does from a pipe,
    /// then never waits for more) and flushes. Once, last.
    pub fn finish(&mut self) -> io::Result<()> {
        let end = self.written + 2 * BLOCK as u64;
        let padded = end.div_ceil(RECORD) * RECORD;
        let zeros = [0u8; BLOCK];
        while self.written < padded {
            self.inner.write_all(&zeros)?;
            self.written += BLOCK as u64;
        }
        self.inner.flush()
    }

    /// The stream the archive was written to.
    pub fn into_inner(self) -> W {
        self.inner
    }

    fn pad(&mut self, size: u64) -> io::Result<()> {
        let rem = (size % BLOCK as u64) as usize;
        if rem != 0 {
            self.inner.write_all(&[0u8; BLOCK][..BLOCK - rem])?;
            self.written += (BLOCK - rem) as u64;
        }
        Ok(())
    }

    fn header(
        &mut self,
        path: &str,
        flag: u8,
        mode: u32,
        mtime: i64,
        size: u64,
        link: &str,
    ) -> io::Result<()> {
        let split = split_name(path);
        let mut records = String::new();
        if split.is_none() {
            pax_record(&mut records, "path", path);
        }
        if link.len() > 100 {
            pax_record(&mut records, "linkpath", link);
        }
        if size > MAX_OCTAL_SIZE {
            pax_record(&mut records, "size", &size.to_string());
        }
        if !records.is_empty() {
            let data = records.into_bytes();
            let block = ustar("././@PaxHeader", "", b'x', 0o644, 0, data.len() as u64, "");
            self.inner.write_all(&block)?;
            self.inner.write_all(&data)?;
            self.written += (BLOCK + data.len()) as u64;
            self.pad(data.len() as u64)?;
        }
        // What does not fit is in the PAX header; the ustar fields get a cut version that
        // readers without PAX can still show.
        let (prefix, name) = split.unwrap_or(("", cut(path, 100)));
        let block = ustar(
            name,
            prefix,
            flag,
            mode,
            mtime.clamp(0, MAX_OCTAL_SIZE as i64),
            size.min(MAX_OCTAL_SIZE),
            cut(link, 100),
        );
        self.inner.write_all(&block)?;
        self.written += BLOCK as u64;
        Ok(())
    }
}

/// `path` as ustar's `(prefix, name)`: the name alone when it fits 100 bytes, else split at
/// a `/` into a prefix of at most 155 and a name of at most 100; `None` when neither works.
fn split_name(path: &str) -> Option<(&str, &str)> {
    if path.len() <= 100 {
        return Some(("", path));
    }
    // The split must leave a non-empty name, so the last `/` (for a directory's trailing
    // one, the one before it) can't be the one at the end.
    let bytes = path.as_bytes();
    (0..bytes.len().saturating_sub(1))
        .rev()
        .filter(|&i| bytes[i] == b'/')
        .find(|&i| i <= 155 && i > 0 && bytes.len() - i - 1 <= 100)
        .map(|i| (&path[..i], &path[i + 1..]))
}

/// The longest prefix of `s` of at most `n` bytes, on a character boundary.
fn cut(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One PAX record; its length counts its own digits.
fn pax_record(out: &mut String, key: &str, value: &str) {
    let body = key.len() + value.len() + 3; // ' ', '=', '\n'
    let mut len = body + 1;
    loop {
        let next = body + len.to_string().len();
        if next == len {
            break;
        }
        len = next;
    }
    out.push_str(&format!("{len} {key}={value}\n"));
}

fn octal_field(field: &mut [u8], v: u64) {
    let digits = field.len() - 1;
    let s = format!("{v:0digits$o}");
    field[..digits].copy_from_slice(&s.as_bytes()[s.len() - digits..]);
    field[digits] = 0;
}

fn ustar(
    name: &str,
    prefix: &str,
    flag: u8,
    mode: u32,
    mtime: i64,
    size: u64,
    link: &str,
) -> [u8; BLOCK] {
    let mut b = [0u8; BLOCK];
    b[..name.len()].copy_from_slice(name.as_bytes());
    octal_field(&mut b[100..108], u64::from(mode & 0o7777));
    octal_field(&mut b[108..116], 0);
    octal_field(&mut b[116..124], 0);
    octal_field(&mut b[124..136], size);
    octal_field(&mut b[136..148], mtime as u64);
    b[156] = flag;
    b[157..157 + link.len()].copy_from_slice(link.as_bytes());
    b[257..263].copy_from_slice(b"ustar\0");
    b[263..265].copy_from_slice(b"00");
    b[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    let (sum, _) = checksums(&b);
    let s = format!("{sum:06o}");
    b[148..154].copy_from_slice(&s.as_bytes()[s.len() - 6..]);
    b[154] = 0;
    b[155] = b' ';
    b
}
