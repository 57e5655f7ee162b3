//! TLS for the server (feature `webhook`): a certificate and key read from files and read
//! again when they change, so a rotation by cert-manager or a Secret update needs no restart.
//!
//! The files are what a `kubernetes.io/tls` Secret mount or cert-manager gives: `tls.crt`
//! (the certificate chain, PEM) and `tls.key` (the key, PEM: PKCS#8, PKCS#1 or SEC1). They
//! are checked at a handshake, at most once per [`TlsFiles::check_every`] (1 s by default):
//! both are read (each at most 1 MiB) and, when their bytes differ from the last read, parsed
//! and checked to match. A good new pair serves every handshake from then on; connections
//! already open keep the pair they shook hands with (nothing is dropped). A broken new pair
//! (garbage, a key that does not match, a file half written) leaves the last good pair
//! serving and is logged once with why, and [`TlsStatus::last_error`] says it, until the
//! files change again. The check happens on the thread of the connection shaking hands, so
//! no thread of its own is needed; between handshakes nothing is read.
//!
//! TLS 1.2 and 1.3 (rustls with ring), ALPN `http/1.1`; no client certificate is asked for
//! (webhooks and `/metrics` authenticate callers by other means).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, ServerConnection};

use super::limits::Limits;
use super::stream::{remaining, timed_out, Stream};
use crate::error::{Error, Result};

/// The largest certificate or key file read.
const MAX_FILE: u64 = 1 << 20;

/// Where the server's certificate and key are, and how often to look for a new pair.
///
/// ```
/// use kube_informer::serve::TlsFiles;
/// use std::time::Duration;
///
/// // cert-manager's and controller-runtime's layout: <dir>/tls.crt and <dir>/tls.key.
/// let files = TlsFiles::new("/tmp/k8s-webhook-server/serving-certs")
///     .check_every(Duration::from_secs(10));
/// assert!(files.cert().ends_with("tls.crt"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    cert: PathBuf,
    key: PathBuf,
    check_every: Duration,
}

impl TlsFiles {
    /// `dir/tls.crt` and `dir/tls.key`.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        TlsFiles::from_paths(dir.join("tls.crt"), dir.join("tls.key"))
    }

    /// A certificate file and a key file anywhere.
    pub fn from_paths(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        TlsFiles {
            cert: cert.into(),
            key: key.into(),
            check_every: Duration::from_secs(1),
        }
    }

    /// Looks for a changed pair at most this often, at a handshake (default 1 s).
    pub fn check_every(mut self, every: Duration) -> Self {
        self.check_every = every;
        self
    }

    /// The certificate file.
    pub fn cert(&self) -> &Path {
        &self.cert
    }

    /// The key file.
    pub fn key(&self) -> &Path {
        &self.key
    }
}

/// What the server knows of its certificate files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsStatus {
    /// How many pairs have been loaded (1 after the start, one more per good rotation).
    pub loads: u64,
    /// Why the files as they are now are not served (the previous pair is), if they are not.
    pub last_error: Option<String>,
}

/// The server's TLS: its rustls config, whose certificate comes from [`Reloading`].
pub(crate) struct Tls {
    config: Arc<ServerConfig>,
    certs: Arc<Reloading>,
}

impl Tls {
    pub(crate) fn new(files: TlsFiles, server: &str) -> Result<Tls> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (cert, key) =
            read_pair(&files).map_err(|e| Error::Config(format!("{server} server: {e}")))?;
        let current = parse_pair(&provider, &cert, &key)
            .map_err(|e| Error::Config(format!("{server} server: {e}")))?;
        let certs = Arc::new(Reloading {
            server: server.to_string(),
            provider: Arc::clone(&provider),
            state: Mutex::new(State {
                files,
                current,
                seen: (cert, key),
                checked: Instant::now(),
                loads: 1,
                last_error: None,
            }),
        });
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| Error::Config(format!("{server} server: TLS: {e}")))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(&certs) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls {
            config: Arc::new(config),
            certs,
        })
    }

    pub(crate) fn status(&self) -> TlsStatus {
        let state = self.certs.state.lock();
        TlsStatus {
            loads: state.loads,
            last_error: state.last_error.clone(),
        }
    }
}

/// Shakes hands within `limits.header_timeout`, counted from the start of the handshake to
/// its end however the client paces its bytes; `None` (and the socket closed) when the
/// client does not complete it in time: garbage, a protocol error, silence, a trickle, a
/// close.
pub(crate) fn handshake(
    tls: &Tls,
    socket: TcpStream,
    peer: SocketAddr,
    limits: &Limits,
) -> Option<Stream> {
    let conn = ServerConnection::new(Arc::clone(&tls.config)).ok()?;
    let mut s = TlsConn { conn, sock: socket };
    let deadline = Instant::now() + limits.header_timeout;
    let mut result = Ok(());
    while result.is_ok() && s.conn.is_handshaking() {
        result = match s.receive_by(deadline) {
            Ok(true) => Ok(()),
            Ok(false) => Err(io::ErrorKind::UnexpectedEof.into()),
            Err(e) => Err(e),
        };
    }
    // The server's last flight (TLS 1.2's Finished, TLS 1.3's session tickets).
    let result = result.and_then(|()| s.flush_by(deadline));
    if let Err(e) = result {
        log::debug!(
            "{} server: TLS handshake with {peer} failed: {e}",
            tls.certs.server
        );
        let _ = s.sock.shutdown(std::net::Shutdown::Both);
        return None;
    }
    Some(Stream::Tls(Box::new(s)))
}

/// A TLS connection whose every wait on the client is bounded by a deadline.
///
/// Why not rustls' `StreamOwned`: its blocking read loops over socket reads until a whole
/// record (up to 16 KiB) has arrived, and each socket read waits afresh for the socket's
/// timeout, so a client trickling a byte at a time keeps a read going for hours whatever
/// timeout is set. Here each socket read is one step, and the time left before the
/// deadline is set again before each, so the deadline holds whatever arrives (a record a
/// byte at a time, records that carry no data, a handshake in slow motion).
pub(crate) struct TlsConn {
    conn: ServerConnection,
    pub(crate) sock: TcpStream,
}

impl TlsConn {
    /// Sends everything rustls has queued, each socket write bounded by what is left before
    /// `deadline`.
    fn flush_by(&mut self, deadline: Instant) -> io::Result<()> {
        while self.conn.wants_write() {
            self.sock.set_write_timeout(Some(remaining(deadline)?))?;
            match self.conn.write_tls(&mut self.sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(timed_out()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Sends what is queued, then reads the socket once (waiting at most until `deadline`)
    /// and processes the records that completed. `Ok(false)`: the client closed its side.
    fn receive_by(&mut self, deadline: Instant) -> io::Result<bool> {
        self.flush_by(deadline)?;
        let n = loop {
            self.sock.set_read_timeout(Some(remaining(deadline)?))?;
            match self.conn.read_tls(&mut self.sock) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(timed_out()),
                r => break r?,
            }
        };
        if let Err(e) = self.conn.process_new_packets() {
            // The alert that says why, if the client still reads.
            let _ = self.flush_by(deadline);
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        Ok(n > 0)
    }

    /// Reads some plaintext before `deadline` (0: the client closed, with or without
    /// `close_notify`).
    pub(crate) fn read_by(&mut self, buf: &mut [u8], deadline: Instant) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            // Nothing decrypted yet: one more read of the socket (an EOF there makes the
            // reader say so above).
            self.receive_by(deadline)?;
        }
    }

    /// Writes all of `bytes` before `deadline`: encrypted a piece at a time, each piece sent
    /// before the next is taken.
    pub(crate) fn write_all_by(&mut self, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
        const PIECE: usize = 16 << 10;
        while !bytes.is_empty() {
            remaining(deadline)?;
            let n = self.conn.writer().write(&bytes[..bytes.len().min(PIECE)])?;
            if n == 0 && !self.conn.wants_write() {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.flush_by(deadline)?;
            bytes = &bytes[n..];
        }
        self.flush_by(deadline)
    }

    /// Sends `close_notify`, best effort before `deadline`.
    pub(crate) fn close_notify(&mut self, deadline: Instant) {
        self.conn.send_close_notify();
        let _ = self.flush_by(deadline);
    }
}

/// The certificate resolver: the last good pair, looked for anew at most every
/// `check_every`.
struct Reloading {
    server: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
    state: Mutex<State>,
}

struct State {
    files: TlsFiles,
    current: Arc<CertifiedKey>,
    /// The bytes last read (good or not), so that a broken pair is reported once.
    seen: (Vec<u8>, Vec<u8>),
    checked: Instant,
    loads: u64,
    last_error: Option<String>,
}

impl std::fmt::Debug for Reloading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloading")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut state = self.state.lock();
        if state.checked.elapsed() >= state.files.check_every {
            state.checked = Instant::now();
            self.check(&mut state);
        }
        Some(Arc::clone(&state.current))
    }
}

impl Reloading {
    fn check(&self, state: &mut State) {
        let pair = match read_pair(&state.files) {
            Ok(p) => p,
            Err(why) => {
                if state.last_error.as_ref() != Some(&why) {
                    log::warn!(
                        "{} server: keeps serving its previous certificate: {why}",
                        self.server
                    );
                    state.last_error = Some(why);
                }
                return;
            }
        };
        if pair == state.seen {
            return;
        }
        match parse_pair(&self.provider, &pair.0, &pair.1) {
            Ok(current) => {
                state.current = current;
                state.loads += 1;
                state.last_error = None;
                log::info!(
                    "{} server: loaded a new certificate from {}",
                    self.server,
                    state.files.cert.display()
                );
            }
            Err(why) => {
                log::warn!(
                    "{} server: keeps serving its previous certificate: {why}",
                    self.server
                );
                state.last_error = Some(why);
            }
        }
        state.seen = pair;
    }
}

fn read_file(path: &Path) -> std::result::Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!(
            "{} is larger than {MAX_FILE} bytes",
            path.display()
        ));
    }
    Ok(bytes)
}

fn read_pair(files: &TlsFiles) -> std::result::Result<(Vec<u8>, Vec<u8>), String> {
    Ok((read_file(&files.cert)?, read_file(&files.key)?))
}

fn parse_pair(
    provider: &rustls::crypto::CryptoProvider,
    cert: &[u8],
    key: &[u8],
) -> std::result::Result<Arc<CertifiedKey>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| format!("the certificate file is not PEM: {e:?}"))?;
    if chain.is_empty() {
        return Err("the certificate file holds no CERTIFICATE block".into());
    }
    // The key's error never quotes the key.
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|_| "the key file holds no usable PEM private key".to_string())?;
    let signer = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("the key is not usable: {e}"))?;
    let certified = CertifiedKey::new(chain, signer);
    certified
        .keys_match()
        .map_err(|e| format!("the key does not match the certificate: {e}"))?;
    Ok(Arc::new(certified))
}
