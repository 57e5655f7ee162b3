//! Exec credential plugins (`client.authentication.k8s.io/v1` and `v1beta1`): a program that
//! prints an `ExecCredential` with a token, as cloud CLIs do.
//!
//! The plugin runs without a terminal (stdin closed), with `KUBERNETES_EXEC_INFO` set, and
//! must finish within a minute. Its credential — a token, a client certificate and key, or
//! both — is cached until its `expirationTimestamp` (less a few seconds) and the plugin runs
//! again then, or after the server answered 401. A new certificate makes the client rebuild its
//! TLS configuration before the next request.
//! A plugin that fails or prints something else gives an error naming the command and
//! quoting its trimmed stderr (never its output, which may hold a credential). A plugin that
//! cannot be started (not installed) shows the kubeconfig's `installHint`, as kubectl does.
//! `Debug` of the provider shows the command and the names of its environment variables,
//! never its arguments or the variables' values.
//!
//! A client with a cancellation token (an informer's) runs the plugin through
//! [`AuthProvider::prepare`]: when the token fires, the plugin is killed and the wait ends
//! within a few tens of milliseconds, so stopping an informer never waits for a plugin.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use serde::Deserialize;

use super::kubeconfig::ExecConfig;
use super::time::parse_rfc3339;
use crate::client::{AuthProvider, Cancel, Identity, Secret};
use crate::error::{Error, Result};

/// How long a plugin may run.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// A token source backed by an exec plugin. `Debug` shows no argument, environment value,
/// credential or cluster detail (see [`ExecConfig`]).
pub struct ExecProvider {
    config: ExecConfig,
    api_version: String,
    cluster_info: Option<serde_json::Value>,
    cached: Mutex<Option<Cached>>,
    runs: AtomicU64,
}

impl std::fmt::Debug for ExecProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecProvider")
            .field("config", &self.config)
            .field("api_version", &self.api_version)
            .field("provides_cluster_info", &self.cluster_info.is_some())
            // Never waits: the lock is held while the plugin runs.
            .field(
                "cached",
                match &self.cached.try_lock() {
                    Some(c) => c as &dyn std::fmt::Debug,
                    None => &"<plugin running>",
                },
            )
            .field("runs", &self.runs)
            .finish()
    }
}

/// The credential of the last run.
#[derive(Clone, Debug)]
struct Cached {
    header: Option<Secret>,
    identity: Option<Identity>,
    expires: Option<SystemTime>,
    /// Which run produced it (numbers the client identities).
    run: u64,
    /// When it was fetched: one request asks for the token and the certificate separately,
    /// and must not run the plugin twice even when the credential is already near expiry.
    fetched: Instant,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredential {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    status: Option<ExecStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecStatus {
    token: Option<Secret>,
    client_certificate_data: Option<String>,
    client_key_data: Option<Secret>,
    expiration_timestamp: Option<String>,
}

/// The result of one plugin run.
pub(crate) struct Credential {
    pub token: Option<Secret>,
    pub identity: Option<Identity>,
    pub expires: Option<SystemTime>,
}

impl ExecProvider {
    /// A provider for `config`; `cluster_info` is passed to plugins that ask for it.
    pub fn new(config: ExecConfig, cluster_info: Option<serde_json::Value>) -> Result<Self> {
        let api_version = config
            .api_version
            .clone()
            .unwrap_or_else(|| "client.authentication.k8s.io/v1".into());
        if !matches!(
            api_version.as_str(),
            "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1"
        ) {
            return Err(Error::Config(format!(
                "exec plugin {}: unsupported apiVersion {api_version:?}",
                config.command
            )));
        }
        if config.interactive_mode.as_deref() == Some("Always") {
            return Err(Error::Config(format!(
                "exec plugin {} needs an interactive terminal (interactiveMode: Always); kube-informer runs plugins without one",
                config.command
            )));
        }
        Ok(ExecProvider {
            config,
            api_version,
            cluster_info,
            cached: Mutex::new(None),
            runs: AtomicU64::new(0),
        })
    }

    fn exec_info(&self) -> String {
        let mut spec = serde_json::json!({ "interactive": false });
        if self.config.provide_cluster_info {
            if let Some(c) = &self.cluster_info {
                spec["cluster"] = c.clone();
            }
        }
        serde_json::json!({
            "apiVersion": self.api_version,
            "kind": "ExecCredential",
            "spec": spec,
        })
        .to_string()
    }

    /// Runs the plugin once; kills it and gives up when `cancel` fires.
    fn run_until(&self, cancel: Option<&Cancel>) -> Result<Credential> {
        let cmd = &self.config.command;
        let fail = |what: String| Error::Config(format!("exec plugin {cmd}: {what}"));
        let mut command = Command::new(cmd);
        command
            .args(self.config.args.iter().flatten())
            .env("KUBERNETES_EXEC_INFO", self.exec_info())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for e in self.config.env.iter().flatten() {
            command.env(&e.name, &e.value);
        }
        let mut child = command.spawn().map_err(|e| {
            // As kubectl does: the plugin's own advice on installing it.
            let hint = self
                .config
                .install_hint
                .as_deref()
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(|h| format!("\n\n{h}"))
                .unwrap_or_default();
            fail(format!("cannot start it: {e}{hint}"))
        })?;
        // Each pipe is read on its own named thread (so a full pipe never blocks the plugin);
        // the buffers come back over channels.
        let drain = |r: Option<Box<dyn Read + Send>>, role: &str| {
            let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(1);
            let spawned = std::thread::Builder::new()
                .name(crate::thread_name::thread_name("exec", role))
                .spawn(move || {
                    let mut buf = Vec::new();
                    if let Some(r) = r {
                        let _ = r.take(16 << 20).read_to_end(&mut buf);
                    }
                    let _ = tx.send(buf);
                });
            spawned.map(|handle| (handle, rx))
        };
        let stdout_pipe = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let stderr_pipe = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let readers =
            drain(stdout_pipe, "stdout").and_then(|o| drain(stderr_pipe, "stderr").map(|e| (o, e)));
        let ((out_thread, out), (err_thread, err)) = match readers {
            Ok(r) => r,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!("cannot read its output: {e}")));
            }
        };
        let deadline = Instant::now() + EXEC_TIMEOUT;
        let poll = Duration::from_millis(20);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if cancel.is_some_and(Cancel::is_cancelled) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    // The pipe readers end when the plugin's output closes; not waited for.
                    return Err(fail("cancelled".into()));
                }
                Ok(None) if Instant::now() < deadline => match cancel {
                    Some(c) => {
                        c.sleep(poll);
                    }
                    None => std::thread::sleep(poll),
                },
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(fail(format!("waiting for it: {e}")));
                }
            }
        };
        // The pipes close when the plugin exits — unless it left a background process holding
        // them. Wait a bounded time; a reader still blocked then ends when that process does.
        let pipes_deadline = Instant::now() + Duration::from_secs(5);
        let collect = |rx: crossbeam_channel::Receiver<Vec<u8>>,
                       thread: std::thread::JoinHandle<()>| {
            match rx.recv_deadline(pipes_deadline) {
                Ok(buf) => {
                    let _ = thread.join();
                    Some(buf)
                }
                Err(_) => None,
            }
        };
        let stdout = collect(out, out_thread);
        let stderr_bytes = collect(err, err_thread).unwrap_or_default();
        let stderr: String = String::from_utf8_lossy(&stderr_bytes)
            .trim()
            .chars()
            .take(500)
            .collect();
        let Some(stdout) = stdout else {
            return Err(fail(format!(
                "exited, but its output stayed open (a background process holds it); stderr: {stderr:?}"
            )));
        };
        let Some(status) = status else {
            return Err(fail(format!(
                "timed out after {}s; stderr: {stderr:?}",
                EXEC_TIMEOUT.as_secs()
            )));
        };
        if !status.success() {
            return Err(fail(format!("failed ({status}); stderr: {stderr:?}")));
        }
        let cred: ExecCredential = serde_json::from_slice(&stdout).map_err(|e| {
            fail(format!(
                "printed something that is not an ExecCredential ({}); stderr: {stderr:?}",
                crate::error::json_error_summary(&e)
            ))
        })?;
        if cred.kind != "ExecCredential" || cred.api_version != self.api_version {
            return Err(fail(format!(
                "printed kind {:?} apiVersion {:?}, expected ExecCredential {}",
                cred.kind, cred.api_version, self.api_version
            )));
        }
        let status = cred
            .status
            .ok_or_else(|| fail("the ExecCredential has no status".into()))?;
        let identity = match (status.client_certificate_data, status.client_key_data) {
            (Some(cert), Some(key)) => {
                let what = format!("exec plugin {cmd}: clientCertificateData");
                crate::client::pem_certificates(cert.as_bytes(), &what)?;
                let what = format!("exec plugin {cmd}: clientKeyData");
                crate::client::pem_private_key(key.expose().as_bytes(), &what)?;
                Some(Identity {
                    cert_pem: cert.into_bytes(),
                    key_pem: key,
                })
            }
            (None, None) => None,
            _ => {
                return Err(fail(
                    "the ExecCredential has a client certificate without a key, or a key without a certificate".into(),
                ))
            }
        };
        if status.token.is_none() && identity.is_none() {
            return Err(fail(
                "the ExecCredential has neither a token nor a client certificate".into(),
            ));
        }
        let expires = status
            .expiration_timestamp
            .as_deref()
            .map(|t| parse_rfc3339(t).ok_or_else(|| fail(format!("bad expirationTimestamp {t:?}"))))
            .transpose()?;
        Ok(Credential {
            token: status
                .token
                .map(|t| Secret::new(format!("Bearer {}", t.expose()))),
            identity,
            expires,
        })
    }

    /// The cached credential, running the plugin when there is none or it is about to expire.
    fn current(&self) -> Result<Cached> {
        self.current_until(None)
    }

    /// [`current`](Self::current), giving up when `cancel` fires (also while another thread
    /// runs the plugin).
    fn current_until(&self, cancel: Option<&Cancel>) -> Result<Cached> {
        let mut cached = match cancel {
            None => self.cached.lock(),
            Some(c) => loop {
                if let Some(g) = self.cached.try_lock_for(Duration::from_millis(20)) {
                    break g;
                }
                if c.is_cancelled() {
                    return Err(Error::Config(format!(
                        "exec plugin {}: cancelled",
                        self.config.command
                    )));
                }
            },
        };
        if let Some(c) = &*cached {
            let fresh = c.fetched.elapsed() < Duration::from_millis(100)
                || c.expires
                    .is_none_or(|t| t > SystemTime::now() + Duration::from_secs(10));
            if fresh {
                return Ok(c.clone());
            }
        }
        let cred = self.run_until(cancel)?;
        let c = Cached {
            header: cred.token,
            identity: cred.identity,
            expires: cred.expires,
            run: self.runs.fetch_add(1, Ordering::SeqCst) + 1,
            fetched: Instant::now(),
        };
        *cached = Some(c.clone());
        Ok(c)
    }
}

impl AuthProvider for ExecProvider {
    fn authorization(&self) -> Result<Option<Secret>> {
        Ok(self.current()?.header)
    }

    fn invalidate(&self) {
        self.cached.lock().take();
    }

    fn client_identity(&self) -> Result<Option<(u64, Identity)>> {
        let c = self.current()?;
        Ok(c.identity.map(|id| (c.run, id)))
    }

    fn prepare(&self, cancel: &Cancel) -> Result<()> {
        self.current_until(Some(cancel)).map(|_| ())
    }
}
