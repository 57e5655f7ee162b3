//! Reading an archive as a stream: headers one at a time, each entry's data read through.

use std::io::{self, Read};

use super::{checksums, Entry, EntryKind, TarError, BLOCK, MAX_METADATA};

/// Reads entries from a tar stream, one at a time: [`next_entry`](Self::next_entry) gives
/// the next header, then the entry's data is read from the reader itself (`Read`, or
/// [`read_data`](Self::read_data) for a typed error); unread data is skipped by the next
/// `next_entry`.
///
/// ```
/// use std::io::Read as _;
/// use kube_informer::pod::tar::{EntryKind, TarReader, TarWriter};
///
/// let mut w = TarWriter::new(Vec::new());
/// w.append_file("notes/hello.txt", 0o644, 0, 6, &b"hello\n"[..])?;
/// w.finish()?;
/// let archive = w.into_inner();
///
/// let mut r = TarReader::new(&archive[..]);
/// let entry = r.next_entry()?.expect("one entry");
/// assert_eq!((entry.path.as_str(), entry.kind), ("notes/hello.txt", EntryKind::File));
/// let mut text = String::new();
/// r.read_to_string(&mut text)?;
/// assert_eq!(text, "hello\n");
/// assert!(r.next_entry()?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TarReader<R> {
    inner: R,
    /// Archive bytes consumed.
    offset: u64,
    /// Data left in the current entry.
    remaining: u64,
    /// Padding after it, to the next block.
    padding: u64,
    /// The current entry's name, for errors.
    current: String,
    finished: bool,
}

impl<R> std::fmt::Debug for TarReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TarReader")
            .field("offset", &self.offset)
            .field("remaining", &self.remaining)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

/// Overrides from GNU long-name entries and PAX headers, for the next entry.
#[derive(Default)]
struct Pending {
    path: Option<String>,
    link: Option<String>,
    size: Option<u64>,
    mtime: Option<i64>,
}

impl<R: Read> TarReader<R> {
    /// Reads the archive from `inner` (buffer it if each read is costly: reads are of a
    /// block or of the caller's buffer).
    pub fn new(inner: R) -> Self {
        TarReader {
            inner,
            offset: 0,
            remaining: 0,
            padding: 0,
            current: String::new(),
            finished: false,
        }
    }

    /// Archive bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The stream under the archive, e.g. to read what follows the end-of-archive marker.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The next entry's header, skipping what is left of the current entry's data; `None`
    /// after the end-of-archive marker (two zero blocks, or one at the end of the stream).
    /// A stream that ends before the marker is [`TarError::Truncated`].
    pub fn next_entry(&mut self) -> Result<Option<Entry>, TarError> {
        if self.finished {
            return Ok(None);
        }
        let skip = self.remaining + self.padding;
        if skip > 0 {
            let during = format!("the data of {}", self.current);
            self.discard(skip, &during)?;
            self.remaining = 0;
            self.padding = 0;
        }
        let mut pending = Pending::default();
        loop {
            let at = self.offset;
            let mut block = [0u8; BLOCK];
            if !self.read_block(&mut block, "a header")? {
                return Err(self.truncated("before the end-of-archive marker"));
            }
            if block.iter().all(|&b| b == 0) {
                let mut second = [0u8; BLOCK];
                if self.read_block(&mut second, "the end-of-archive marker")?
                    && second.iter().any(|&b| b != 0)
                {
                    return Err(malformed(at, "a zero block followed by a header"));
                }
                self.finished = true;
                return Ok(None);
            }
            let stored = octal(&block[148..156])
                .map_err(|m| malformed(at, format!("not a tar header: its checksum field: {m}")))?;
            let (unsigned, signed) = checksums(&block);
            if stored != unsigned && stored != signed {
                return Err(TarError::Checksum {
                    offset: at,
                    stored,
                    computed: unsigned,
                });
            }
            let flag = block[156];
            let mut size = number(&block[124..136]).map_err(|m| malformed(at, m))?;
            match flag {
                b'L' | b'K' | b'x' | b'g' => {
                    let what = if flag == b'x' || flag == b'g' {
                        "PAX header"
                    } else if flag == b'L' {
                        "GNU long name"
                    } else {
                        "GNU long link name"
                    };
                    if size > MAX_METADATA {
                        return Err(TarError::TooLarge { what, size });
                    }
                    let data = self.read_metadata(size, what)?;
                    match flag {
                        b'L' => pending.path = Some(c_string(&data, at)?),
                        b'K' => pending.link = Some(c_string(&data, at)?),
                        b'x' => pax(&data, &mut pending).map_err(|m| malformed(at, m))?,
                        _ => {}
                    }
                    continue;
                }
                _ => {}
            }
            let ustar = &block[257..263] == b"ustar\0";
            let mut name = field_bytes(&block[0..100]).to_vec();
            let prefix = field_bytes(&block[345..500]);
            if ustar && !prefix.is_empty() {
                let mut full = prefix.to_vec();
                full.push(b'/');
                full.extend_from_slice(&name);
                name = full;
            }
            let path = match pending.path.take() {
                Some(p) => p,
                None => utf8(name, at)?,
            };
            let link = match pending.link.take() {
                Some(l) => l,
                None => utf8(field_bytes(&block[157..257]).to_vec(), at)?,
            };
            if let Some(s) = pending.size {
                size = s;
            }
            let kind = match flag {
                b'0' | 0 | b'7' => EntryKind::File,
                b'1' => EntryKind::HardLink,
                b'2' => EntryKind::Symlink,
                b'5' => EntryKind::Directory,
                other => EntryKind::Other(other),
            };
            // Header-only types carry no data whatever the size field says (as Go's and
            // GNU tar's readers take them).
            if matches!(
                kind,
                EntryKind::HardLink | EntryKind::Symlink | EntryKind::Directory
            ) || matches!(flag, b'3' | b'4' | b'6')
            {
                size = 0;
            }
            let mode = (octal(&block[100..108]).map_err(|m| malformed(at, m))? & 0o7777) as u32;
            let mtime = match pending.mtime {
                Some(t) => t,
                None => number(&block[136..148]).map_err(|m| malformed(at, m))? as i64,
            };
            // Only links have a target (whatever else a header's field holds).
            let link = if matches!(kind, EntryKind::Symlink | EntryKind::HardLink) {
                link
            } else {
                String::new()
            };
            self.remaining = size;
            self.padding = pad(size);
            self.current = path.chars().take(256).collect();
            return Ok(Some(Entry {
                path,
                kind,
                size,
                mode,
                mtime,
                link,
            }));
        }
    }

    /// Reads the current entry's data; `Ok(0)` at its end. A stream that ends early is
    /// [`TarError::Truncated`].
    pub fn read_data(&mut self, buf: &mut [u8]) -> Result<usize, TarError> {
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = loop {
            match self.inner.read(&mut buf[..want]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(TarError::Io(e)),
            }
        };
        if n == 0 {
            let during = format!("the data of {}", self.current);
            return Err(self.truncated(&during));
        }
        self.remaining -= n as u64;
        self.offset += n as u64;
        Ok(n)
    }

    fn truncated(&self, during: &str) -> TarError {
        TarError::Truncated {
            during: during.to_owned(),
            offset: self.offset,
        }
    }

    /// Fills `block`; false at a clean end of stream (nothing read).
    fn read_block(&mut self, block: &mut [u8; BLOCK], during: &str) -> Result<bool, TarError> {
        let mut got = 0;
        while got < BLOCK {
            match self.inner.read(&mut block[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => return Err(self.truncated(during)),
                Ok(n) => {
                    got += n;
                    self.offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TarError::Io(e)),
            }
        }
        Ok(true)
    }

    fn discard(&mut self, mut n: u64, during: &str) -> Result<(), TarError> {
        let mut buf = [0u8; 8 * 1024];
        while n > 0 {
            let want = buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            match self.inner.read(&mut buf[..want]) {
                Ok(0) => return Err(self.truncated(during)),
                Ok(k) => {
                    n -= k as u64;
                    self.offset += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TarError::Io(e)),
            }
        }
        Ok(())
    }

    /// A metadata entry's data (bounded by the caller), and its padding skipped.
    fn read_metadata(&mut self, size: u64, what: &str) -> Result<Vec<u8>, TarError> {
        let mut data = vec![0u8; size as usize];
        let mut got = 0;
        while got < data.len() {
            match self.inner.read(&mut data[got..]) {
                Ok(0) => return Err(self.truncated(&format!("a {what}"))),
                Ok(n) => {
                    got += n;
                    self.offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TarError::Io(e)),
            }
        }
        self.discard(pad(size), &format!("a {what}"))?;
        Ok(data)
    }
}

impl<R: Read> Read for TarReader<R> {
    /// The current entry's data (see [`read_data`](TarReader::read_data)); a truncated
    /// archive is an `UnexpectedEof` error.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_data(buf).map_err(|e| match e {
            TarError::Io(e) => e,
            other => io::Error::new(io::ErrorKind::UnexpectedEof, other.to_string()),
        })
    }
}

fn pad(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

fn malformed(offset: u64, message: impl Into<String>) -> TarError {
    TarError::Malformed {
        offset,
        message: message.into(),
    }
}

/// A NUL-terminated field's bytes.
fn field_bytes(f: &[u8]) -> &[u8] {
    let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
    &f[..end]
}

fn utf8(bytes: Vec<u8>, at: u64) -> Result<String, TarError> {
    String::from_utf8(bytes).map_err(|e| {
        malformed(
            at,
            format!(
                "a name that is not UTF-8 (byte {} of it)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// A GNU long name: the data up to its first NUL.
fn c_string(data: &[u8], at: u64) -> Result<String, TarError> {
    utf8(field_bytes(data).to_vec(), at)
}

/// An octal field: optional leading spaces, digits, then NUL or space (or the field's end).
fn octal(f: &[u8]) -> Result<u64, String> {
    let mut v: u64 = 0;
    for &b in f.iter().skip_while(|&&b| b == b' ') {
        match b {
            b'0'..=b'7' => {
                v = v
                    .checked_mul(8)
                    .and_then(|v| v.checked_add(u64::from(b - b'0')))
                    .ok_or("an octal number too large")?;
            }
            0 | b' ' => break,
            _ => return Err(format!("a numeric field holds {:?}", b as char)),
        }
    }
    Ok(v)
}

/// A numeric field: octal, or GNU base-256 (high bit of the first byte set) for values
/// that do not fit; negative and values over `i64::MAX` are refused.
fn number(f: &[u8]) -> Result<u64, String> {
    match f.first() {
        Some(&first) if first & 0x80 != 0 => {
            if first & 0x40 != 0 {
                return Err("a negative base-256 number".into());
            }
            let mut v: u64 = u64::from(first & 0x3f);
            for &b in &f[1..] {
                if v > (i64::MAX as u64) >> 8 {
                    return Err("a base-256 number too large".into());
                }
                v = (v << 8) | u64::from(b);
            }
            Ok(v)
        }
        _ => {
            let v = octal(f)?;
            if v > i64::MAX as u64 {
                return Err("an octal number too large".into());
            }
            Ok(v)
        }
    }
}

/// PAX records: `<len> <key>=<value>\n`, `len` counting the whole record.
fn pax(mut data: &[u8], pending: &mut Pending) -> Result<(), String> {
    while !data.is_empty() {
        let space = data
            .iter()
            .position(|&b| b == b' ')
            .ok_or("a PAX record without a length")?;
        let len: usize = std::str::from_utf8(&data[..space])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or("a PAX record's length is not a number")?;
        if len <= space + 1 || len > data.len() || data[len - 1] != b'\n' {
            return Err(format!("a PAX record's length {len} does not fit it"));
        }
        let record = &data[space + 1..len - 1];
        data = &data[len..];
        let eq = record
            .iter()
            .position(|&b| b == b'=')
            .ok_or("a PAX record without '='")?;
        let (key, value) = (&record[..eq], &record[eq + 1..]);
        let text = || {
            String::from_utf8(value.to_vec())
                .map_err(|_| "a PAX value that is not UTF-8".to_string())
        };
        match key {
            b"path" if !value.is_empty() => pending.path = Some(text()?),
            b"linkpath" if !value.is_empty() => pending.link = Some(text()?),
            b"size" if !value.is_empty() => {
                let s: u64 = text()?
                    .parse()
                    .map_err(|_| "a PAX size that is not a number")?;
                if s > i64::MAX as u64 {
                    return Err("a PAX size too large".into());
                }
                pending.size = Some(s);
            }
            b"mtime" if !value.is_empty() => {
                let t = text()?;
                let whole = t.split('.').next().unwrap_or("");
                pending.mtime = Some(
                    whole
                        .parse()
                        .map_err(|_| "a PAX mtime that is not a number")?,
                );
            }
            _ => {}
        }
    }
    Ok(())
}
