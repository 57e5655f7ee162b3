//! Cluster configuration: kubeconfig files (with `KUBECONFIG` merging and contexts), the
//! in-cluster service account, and the credentials they name — by the rules kubectl and
//! client-go follow, so any cluster kubectl reaches is reachable with the same files:
//! CA file or data, `insecure-skip-tls-verify`, `tls-server-name`, `proxy-url` (HTTP or
//! SOCKS5); tokens, token files (re-read when they change), client certificates (files or
//! data; RSA, EC, PKCS#8 keys), basic auth, impersonation (`as`, `as-uid`, `as-groups`,
//! `as-user-extra`), exec credential plugins (tokens or certificates) and the `oidc`
//! auth-provider (refreshed and written back to the file, as kubectl does).
//!
//! Three common ways to get a [`Client`]:
//!
//! ```no_run
//! use kube_informer::config::{Config, KubeconfigOptions};
//!
//! # fn main() -> kube_informer::Result<()> {
//! // 1. Whatever kubectl would use: the files $KUBECONFIG names (and only those), else
//! //    ~/.kube/config, else in-cluster.
//! let client = Config::infer()?.client()?;
//!
//! // 2. An explicit file and context.
//! let options = KubeconfigOptions::new().context("staging");
//! let client = Config::from_kubeconfig_with("/etc/app/kubeconfig", &options)?.client()?;
//!
//! // 3. Inside a pod, with its service account.
//! let client = Config::in_cluster()?.client()?;
//! # Ok(()) }
//! ```
//!
//! Every problem is an [`Error::Config`] naming the file, the context, cluster or user, and
//! what is wrong: malformed YAML (with line and column), an unknown context, a context that
//! names a missing cluster or user, bad base64, a PEM without a certificate or key, an
//! unreadable file, an exec plugin that is missing (with its `installHint`), fails or times
//! out.
//!
//! # Which files
//!
//! Exactly kubectl's rules (client-go's `clientcmd` loader), so the same environment picks
//! the same cluster:
//!
//! - `KUBECONFIG` set and non-empty: the files it lists (`:`-separated, `;` on Windows), and
//!   only those. Empty entries and repeats are skipped, so are files that do not exist; if
//!   none exists that is an error naming them all (kubectl never falls back to
//!   `~/.kube/config` then, and neither do we: a typo must not select another cluster).
//! - Several files merge in list order, the first to set a value winning: `current-context`
//!   from the first file that has one; each cluster, user and context taken whole from the
//!   first file defining its name.
//! - Relative paths inside a file (CA, client certificate and key, token file, an exec
//!   command containing `/`) are relative to that file's folder.
//! - `KUBECONFIG` unset or empty: `~/.kube/config`; without it, the in-cluster service
//!   account (`KUBERNETES_SERVICE_HOST`); without that, an error saying what was looked for.
//!
//! # Proxies
//!
//! A cluster's `proxy-url` is used for every request to it. Without one, the environment
//! decides, as for kubectl (client-go uses Go's `http.ProxyFromEnvironment`): `HTTPS_PROXY`
//! for an `https://` server, `HTTP_PROXY` for an `http://` one (upper case wins over lower
//! case), except for hosts `NO_PROXY` matches (`*`, IP addresses, CIDR ranges, domains with
//! their subdomains, `.domain` for subdomains only, optional `:port`). `localhost` and
//! loopback addresses are never proxied — Go's rule too, kept because a remote proxy cannot
//! reach the caller's loopback anyway. Proxies may be HTTP(S) or SOCKS5 (`socks5://`,
//! `socks5h://` to let the proxy resolve the name), in `proxy-url` and in the environment
//! alike; `ALL_PROXY` is not read (Go's rules do not read it). `tls-server-name` cannot be
//! combined with a proxy; add the server to `NO_PROXY` if the environment sets one.
//!
//! # Credentials: which one wins, and never none by silence
//!
//! As in client-go: a `token` (else a `tokenFile`) wins over basic credentials and an
//! `auth-provider`; `exec` and `auth-provider` together are refused; a client certificate
//! goes with any of them. Whatever the kubeconfig asks for is either used or an error:
//!
//! - `auth-provider: oidc`: see [`OidcProvider`] (expiry from the id-token's `exp`, refresh
//!   at the issuer, write-back to the file the user came from under kubectl's
//!   `<file>.lock`, one refresh for many threads, a read-only file tolerated). With no
//!   usable token, or when the issuer fails, requests fail with
//!   [`Error::Config`] and are not sent.
//! - `auth-provider: gcp` / `azure` (removed from kubectl in 1.26) and unknown names: the
//!   kubeconfig still loads, but building a client for that user fails with an error
//!   naming the exec plugin that replaced the provider (`gke-gcloud-auth-plugin`,
//!   `kubelogin`) — see [`UnsupportedAuthProvider`]. Loading succeeds so that a program
//!   can still read the file or use its other contexts; the client is refused, as
//!   client-go refuses it when it builds the transport.
//! - `as-uid`, `as-groups` or `as-user-extra` without `as`: refused at load. kubectl drops
//!   them silently and acts as the real user, which is not what the file asked for.
//!
//! # Kubeconfig fields that are ignored, and why
//!
//! Every field of client-go's `clientcmd/api/v1` types (`Config`, `Cluster`, `AuthInfo`,
//! `Context`, `Preferences`, `ExecConfig`, `AuthProviderConfig`) is read, except these,
//! none of which makes a connection less safe when ignored:
//!
//! - `apiVersion`, `kind` of the file: not checked (kubectl reads files without them).
//! - `preferences` (`colors`, `extensions`): terminal output settings of kubectl.
//! - `extensions` of the file, of clusters, users and contexts: data for other tools. The
//!   one client-go reads, a cluster's `client.authentication.k8s.io/exec`, is handed to
//!   exec plugins as `spec.cluster.config`; it is not passed here (plugins asking for
//!   cluster info get the server, the CA data and `insecure-skip-tls-verify`), which a
//!   plugin sees as a missing option, never as weaker checks.
//! - `disable-compression` of a cluster: responses may still come gzip-compressed; this
//!   changes bandwidth, not who can read or change the data.
//! - The `extra-scopes` of an oidc auth-provider: deprecated; client-go does not send
//!   them on refresh either.
//!
//! Fields that matter for security are all honoured or refused: `insecure-skip-tls-verify`
//! (refused together with a CA, as in client-go), `tls-server-name` (refused together with
//! a proxy), `certificate-authority(-data)`, `proxy-url` (schemes other than http, https,
//! socks5 and socks5h are refused), every credential above, and `interactiveMode: Always`
//! of an exec plugin (refused: there is no terminal).
//!
//! # Secrets
//!
//! `Debug` of everything here is safe to log: tokens, passwords and keys are
//! [`Secret`]s; exec plugin arguments and environment values are hidden (their count and
//! names are shown); `auth-provider` settings show their keys, and values only for the
//! harmless ones (issuer, client id, CA file); `user:password@` in server and proxy URLs becomes `<redacted>@`, also
//! in error messages. Logging at `trace` is safe too once the one dependency target that
//! dumps the bytes on the wire is filtered: see [`SENSITIVE_LOG_TARGETS`].

mod auth_provider;
mod exec;
mod file_lock;
mod kubeconfig;
mod logging;
mod oidc;
mod persist;
mod proxy;
mod redact;
pub(crate) mod server_url;
pub(crate) mod time;
mod token_file;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;

pub use auth_provider::UnsupportedAuthProvider;
pub use exec::{ExecProvider, EXEC_TIMEOUT};
pub use kubeconfig::{
    AuthInfo, AuthProviderConfig, Cluster, Context, ExecConfig, ExecEnvVar, Kubeconfig,
    NamedCluster, NamedContext, NamedUser,
};
pub use logging::{is_sensitive_log_target, SENSITIVE_LOG_TARGETS};
pub use oidc::{OidcProvider, OIDC_TIMEOUT};
pub(crate) use proxy::proxy_from_env;
pub(crate) use redact::redact_url;
pub use time::parse_rfc3339;
pub use token_file::TokenFile;

use crate::client::{Auth, Client, ClientConfig, Identity, Secret};
use crate::error::{Error, Result};

/// How the error for "no configuration anywhere" begins.
const NOTHING_CONFIGURED: &str = "no configuration found";

/// Where the service account's files are mounted in a pod.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Choices overriding a kubeconfig's current context, like kubectl's flags: a builder,
/// nothing overridden by default.
///
/// ```
/// use kube_informer::config::KubeconfigOptions;
/// let options = KubeconfigOptions::new().context("staging").namespace("web");
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default)]
pub struct KubeconfigOptions {
    /// Load this kubeconfig file instead of `KUBECONFIG` or `~/.kube/config`, like kubectl's
    /// `--kubeconfig` flag: the file must exist (a missing one is an error, never "nothing
    /// configured").
    pub(crate) kubeconfig: Option<PathBuf>,
    /// Use this context instead of `current-context`.
    pub(crate) context: Option<String>,
    /// Use this cluster instead of the context's.
    pub(crate) cluster: Option<String>,
    /// Use this user instead of the context's.
    pub(crate) user: Option<String>,
    /// Use this namespace instead of the context's.
    pub(crate) namespace: Option<String>,
}

impl KubeconfigOptions {
    /// Nothing overridden (the same as `KubeconfigOptions::default()`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Load this kubeconfig file instead of `KUBECONFIG` or `~/.kube/config`, like kubectl's
    /// `--kubeconfig` flag: the file must exist (a missing one is an error, never "nothing
    /// configured").
    pub fn kubeconfig(mut self, path: impl Into<PathBuf>) -> Self {
        self.kubeconfig = Some(path.into());
        self
    }

    /// Use this context instead of `current-context` (`--context`).
    pub fn context(mut self, context: &str) -> Self {
        self.context = Some(context.to_string());
        self
    }

    /// Use this cluster instead of the context's (`--cluster`).
    pub fn cluster(mut self, cluster: &str) -> Self {
        self.cluster = Some(cluster.to_string());
        self
    }

    /// Use this user instead of the context's (`--user`).
    pub fn user(mut self, user: &str) -> Self {
        self.user = Some(user.to_string());
        self
    }

    /// Use this namespace instead of the context's (`--namespace`).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }
}

/// A loaded configuration: everything a [`Client`] needs, and where it came from.
///
/// `Debug` is safe to log: credentials are [`Secret`]s, exec plugin arguments and
/// environment values are hidden, and `user:password@` in the server and proxy URLs is
/// replaced by `<redacted>@`.
#[derive(Clone, Debug)]
pub struct Config {
    /// Connection settings.
    pub client_config: ClientConfig,
    /// `kubeconfig <files> context <name>`, or `in-cluster`.
    pub source: String,
}

impl Config {
    /// A client for this configuration.
    pub fn client(&self) -> Result<Client> {
        Client::new_from(self.client_config.clone(), Some(&self.source))
    }

    /// The default namespace (from the context, or the pod's namespace in-cluster).
    pub fn namespace(&self) -> &str {
        &self.client_config.default_namespace
    }

    /// What kubectl would use: the files `KUBECONFIG` names, else `~/.kube/config`, else the
    /// in-cluster service account.
    ///
    /// `KUBECONFIG`, when set and non-empty, is the whole story, as for kubectl: a list of
    /// files separated by `:` (`;` on Windows); empty entries and repeats are skipped; files
    /// that do not exist are skipped, but when none of them exists that is an error naming
    /// them — never a fall back to `~/.kube/config` or the service account, so a typo cannot
    /// silently pick another cluster. The files are merged as
    /// [`from_kubeconfig_paths`](Self::from_kubeconfig_paths) describes.
    pub fn infer() -> Result<Config> {
        Self::infer_with(&KubeconfigOptions::default())
    }

    /// [`infer_with`](Self::infer_with), but `Ok(None)` when nothing is configured at all
    /// (`KUBECONFIG` unset, no `~/.kube/config`, not in a pod): for programs that fall back to
    /// something else, such as a demo mode. A configuration that exists but is broken is
    /// still an error, and so is a `KUBECONFIG` naming no existing file.
    pub fn infer_if_configured(options: &KubeconfigOptions) -> Result<Option<Config>> {
        match Self::infer_with(options) {
            Err(Error::Config(m)) if m.starts_with(NOTHING_CONFIGURED) => Ok(None),
            other => other.map(Some),
        }
    }

    /// [`infer`](Self::infer) with a chosen kubeconfig file, context, cluster, user or
    /// namespace.
    pub fn infer_with(options: &KubeconfigOptions) -> Result<Config> {
        if let Some(path) = &options.kubeconfig {
            return Self::from_kubeconfig_paths(std::slice::from_ref(path), options);
        }
        if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            let mut named: Vec<PathBuf> = Vec::new();
            for p in std::env::split_paths(&list) {
                if !p.as_os_str().is_empty() && !named.contains(&p) {
                    named.push(p);
                }
            }
            let existing: Vec<PathBuf> = named.iter().filter(|p| p.exists()).cloned().collect();
            if existing.is_empty() {
                let shown: Vec<String> = named.iter().map(|p| p.display().to_string()).collect();
                return Err(Error::Config(if shown.is_empty() {
                    format!("KUBECONFIG is set ({list:?}) but names no file")
                } else {
                    format!(
                        "none of the files KUBECONFIG names exists: {} (like kubectl, ~/.kube/config is not used when KUBECONFIG is set)",
                        shown.join(", ")
                    )
                }));
            }
            return Self::from_kubeconfig_paths(&existing, options);
        }
        let home = match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => {
                let default = Path::new(&home).join(".kube").join("config");
                if default.exists() {
                    return Self::from_kubeconfig_paths(&[default], options);
                }
                format!("{} does not exist", default.display())
            }
            None => "HOME is not set (so there is no ~/.kube/config)".to_owned(),
        };
        if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
            return Self::in_cluster();
        }
        Err(Error::Config(format!(
            "{NOTHING_CONFIGURED}: KUBECONFIG is not set, {home}, and this is not a pod (KUBERNETES_SERVICE_HOST is unset)"
        )))
    }

    /// Loads one kubeconfig file (which must exist), with its current context.
    pub fn from_kubeconfig(path: impl AsRef<Path>) -> Result<Config> {
        Self::from_kubeconfig_with(path, &KubeconfigOptions::default())
    }

    /// Loads one kubeconfig file with chosen overrides.
    pub fn from_kubeconfig_with(
        path: impl AsRef<Path>,
        options: &KubeconfigOptions,
    ) -> Result<Config> {
        Self::from_kubeconfig_paths(&[path.as_ref().to_path_buf()], options)
    }

    /// Loads and merges several kubeconfig files (each must exist), by kubectl's rules:
    /// `current-context` comes from the first file that sets it; a cluster, user or context
    /// is taken whole from the first file that defines that name (later files' entries of
    /// the same name are ignored, not merged field by field); relative paths inside a file
    /// (certificate, key and token files; an exec command containing `/`) resolve against
    /// that file's folder.
    pub fn from_kubeconfig_paths(paths: &[PathBuf], options: &KubeconfigOptions) -> Result<Config> {
        let mut merged: Option<Kubeconfig> = None;
        for p in paths {
            let kc = Kubeconfig::read(p)?;
            match &mut merged {
                Some(m) => m.merge(kc),
                None => merged = Some(kc),
            }
        }
        let kc = merged.ok_or_else(|| Error::Config("no kubeconfig files given".into()))?;
        Self::from_parsed(&kc, options)
    }

    /// Loads kubeconfig YAML held in memory (relative paths resolve against the current
    /// directory).
    pub fn from_kubeconfig_str(yaml: &str, options: &KubeconfigOptions) -> Result<Config> {
        Self::from_parsed(&Kubeconfig::parse(yaml, "(inline)")?, options)
    }

    /// Builds a configuration from a parsed kubeconfig.
    pub fn from_parsed(kc: &Kubeconfig, options: &KubeconfigOptions) -> Result<Config> {
        let origin = kc.origin();
        let err = |m: String| Error::Config(format!("kubeconfig {origin}: {m}"));
        let context_name = options
            .context
            .clone()
            .or_else(|| kc.current_context.clone().filter(|c| !c.is_empty()))
            .ok_or_else(|| err("no current-context is set and no context was chosen".into()))?;
        let context = kc
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .map(|c| c.context.clone())
            .ok_or_else(|| err(format!("context {context_name:?} is not defined")))?;
        let cluster_name = options.cluster.clone().unwrap_or(context.cluster.clone());
        let cluster = kc
            .clusters
            .iter()
            .find(|c| c.name == cluster_name)
            .map(|c| &c.cluster)
            .ok_or_else(|| {
                err(format!(
                    "context {context_name:?} names cluster {cluster_name:?}, which is not defined"
                ))
            })?;
        let user_name = options.user.clone().unwrap_or(context.user.clone());
        let (user, user_source) = if user_name.is_empty() {
            (AuthInfo::default(), None)
        } else {
            kc.users
                .iter()
                .find(|u| u.name == user_name)
                .map(|u| (u.user.clone(), u.source.clone()))
                .ok_or_else(|| {
                    err(format!(
                        "context {context_name:?} names user {user_name:?}, which is not defined"
                    ))
                })?
        };
        let mut cc = cluster_config(
            cluster,
            &format!("kubeconfig {origin}: cluster {cluster_name:?}"),
        )?;
        apply_user(
            &mut cc,
            &user,
            (&user_name, user_source.as_deref()),
            cluster,
            &format!("kubeconfig {origin}: user {user_name:?}"),
        )?;
        cc.default_namespace = options
            .namespace
            .clone()
            .or(context.namespace)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        Ok(Config {
            client_config: cc,
            source: format!("kubeconfig {origin} context {context_name:?}"),
        })
    }

    /// The in-cluster configuration: `KUBERNETES_SERVICE_HOST`/`PORT` and the service
    /// account's token (re-read as it rotates), CA and namespace.
    pub fn in_cluster() -> Result<Config> {
        let host = std::env::var("KUBERNETES_SERVICE_HOST")
            .map_err(|_| Error::Config("in-cluster: KUBERNETES_SERVICE_HOST is not set".into()))?;
        let port = std::env::var("KUBERNETES_SERVICE_PORT")
            .map_err(|_| Error::Config("in-cluster: KUBERNETES_SERVICE_PORT is not set".into()))?;
        Self::in_cluster_from(&host, &port, Path::new(SERVICE_ACCOUNT_DIR))
    }

    /// The in-cluster configuration from explicit parts (for tests and sidecars).
    pub fn in_cluster_from(host: &str, port: &str, service_account_dir: &Path) -> Result<Config> {
        let err = |m: String| Error::Config(format!("in-cluster: {m}"));
        if host.is_empty() || port.is_empty() || port.parse::<u16>().is_err() {
            return Err(err(format!("bad service address {host:?} port {port:?}")));
        }
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let mut cc = ClientConfig::new(format!("https://{host}:{port}"));
        let ca_path = service_account_dir.join("ca.crt");
        let ca = std::fs::read(&ca_path)
            .map_err(|e| err(format!("cannot read {}: {e}", ca_path.display())))?;
        check_certificates(&ca, &format!("in-cluster: {}", ca_path.display()))?;
        cc.ca_pem = Some(ca);
        let token_path = service_account_dir.join("token");
        let provider = TokenFile::new(&token_path);
        crate::client::AuthProvider::authorization(&provider)?;
        cc.auth = Auth::Provider(Arc::new(provider));
        let ns_path = service_account_dir.join("namespace");
        cc.default_namespace = std::fs::read_to_string(&ns_path)
            .map(|s| s.trim().to_owned())
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".into());
        Ok(Config {
            client_config: cc,
            source: "in-cluster".into(),
        })
    }
}

fn decode_base64(data: &str, what: &str) -> Result<Vec<u8>> {
    let cleaned: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .map_err(|e| Error::Config(format!("{what} is not valid base64: {e}")))
}

fn read_file(path: &str, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::Config(format!("{what}: cannot read {path}: {e}")))
}

fn check_certificates(pem: &[u8], what: &str) -> Result<()> {
    crate::client::pem_certificates(pem, what).map(|_| ())
}

fn cluster_config(cluster: &Cluster, what: &str) -> Result<ClientConfig> {
    let server = cluster
        .server
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Config(format!("{what} has no server")))?;
    let mut cc = ClientConfig::new(server);
    let ca = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(data), _) if !data.is_empty() => Some(decode_base64(
            data,
            &format!("{what}: certificate-authority-data"),
        )?),
        (_, Some(path)) if !path.is_empty() => {
            Some(read_file(path, &format!("{what}: certificate-authority"))?)
        }
        _ => None,
    };
    if let Some(ca) = &ca {
        check_certificates(ca, &format!("{what}: certificate authority"))?;
    }
    if cluster.insecure_skip_tls_verify && ca.is_some() {
        return Err(Error::Config(format!(
            "{what}: insecure-skip-tls-verify and a certificate authority are both set (client-go refuses this too)"
        )));
    }
    cc.ca_pem = ca;
    cc.insecure_skip_tls_verify = cluster.insecure_skip_tls_verify;
    cc.proxy = cluster.proxy_url.clone().filter(|p| !p.is_empty());
    cc.tls_server_name = cluster.tls_server_name.clone().filter(|n| !n.is_empty());
    Ok(cc)
}

/// Fills in `user`'s credentials; `(user_name, source)` say which entry of which file it is
/// (an auth-provider writes refreshed tokens back there).
fn apply_user(
    cc: &mut ClientConfig,
    user: &AuthInfo,
    (user_name, source): (&str, Option<&Path>),
    cluster: &Cluster,
    what: &str,
) -> Result<()> {
    let cert = match (&user.client_certificate_data, &user.client_certificate) {
        (Some(d), _) if !d.is_empty() => Some(decode_base64(
            d,
            &format!("{what}: client-certificate-data"),
        )?),
        (_, Some(p)) if !p.is_empty() => {
            Some(read_file(p, &format!("{what}: client-certificate"))?)
        }
        _ => None,
    };
    let key = match (&user.client_key_data, &user.client_key) {
        (Some(d), _) if !d.expose().is_empty() => Some(decode_base64(
            d.expose(),
            &format!("{what}: client-key-data"),
        )?),
        (_, Some(p)) if !p.is_empty() => Some(read_file(p, &format!("{what}: client-key"))?),
        _ => None,
    };
    match (cert, key) {
        (Some(cert), Some(key)) => {
            check_certificates(&cert, &format!("{what}: client certificate"))?;
            crate::client::pem_private_key(&key, &format!("{what}: client key"))?;
            let key = String::from_utf8(key)
                .map_err(|_| Error::Config(format!("{what}: client key is not PEM text")))?;
            cc.identity = Some(Identity {
                cert_pem: cert,
                key_pem: Secret::new(key),
            });
        }
        (Some(_), None) => {
            return Err(Error::Config(format!(
                "{what}: a client certificate without a client key"
            )))
        }
        (None, Some(_)) => {
            return Err(Error::Config(format!(
                "{what}: a client key without a client certificate"
            )))
        }
        (None, None) => {}
    }
    let provider = user
        .auth_provider
        .as_ref()
        .filter(|p| !p.name.is_empty() || !p.config.is_empty());
    if provider.is_some() && user.exec.is_some() {
        return Err(Error::Config(format!(
            "{what}: exec and auth-provider cannot be used together (client-go refuses this too)"
        )));
    }
    let token_file = user.token_file.as_deref().filter(|p| !p.is_empty());
    if let Some(t) = user.token.as_ref().filter(|t| !t.expose().is_empty()) {
        // Both: client-go sends the file's token (re-read as it changes) and falls back to
        // the inline one only while the file cannot be read.
        cc.auth = match token_file {
            Some(path) => Auth::Provider(Arc::new(TokenFile::with_fallback(path, t.clone()))),
            None => Auth::Bearer(t.clone()),
        };
    } else if let Some(path) = user.token_file.as_deref().filter(|p| !p.is_empty()) {
        let provider = TokenFile::new(path);
        crate::client::AuthProvider::authorization(&provider)
            .map_err(|e| Error::Config(format!("{what}: {e}")))?;
        cc.auth = Auth::Provider(Arc::new(provider));
    } else if let Some(exec) = &user.exec {
        let info = serde_json::json!({
            "server": cluster.server,
            "insecure-skip-tls-verify": cluster.insecure_skip_tls_verify,
            "certificate-authority-data": cluster.certificate_authority_data,
        });
        let provider = ExecProvider::new(exec.clone(), Some(info))
            .map_err(|e| Error::Config(format!("{what}: {e}")))?;
        cc.auth = Auth::Provider(Arc::new(provider));
    } else if let Some(u) = user.username.as_ref().filter(|u| !u.is_empty()) {
        cc.auth = Auth::Basic {
            username: u.clone(),
            password: user.password.clone().unwrap_or_else(|| Secret::new("")),
        };
    }
    if let Some(p) = provider {
        // A token or basic credentials win over an auth-provider, as in client-go (whose
        // header is set first); but a provider that cannot work at all (gcp, azure, an
        // unknown name, an oidc block missing its issuer) is refused whatever else is set,
        // as client-go refuses it when building the transport.
        let built = auth_provider::build(p, user_name, source, what);
        if matches!(cc.auth, Auth::None) || built.check().is_err() {
            cc.auth = Auth::Provider(built);
        }
    }
    let user_set = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.is_empty());
    let groups = user.impersonate_groups.clone().unwrap_or_default();
    let extra = user.impersonate_user_extra.clone().unwrap_or_default();
    if !user_set(&user.impersonate)
        && (user_set(&user.impersonate_uid) || !groups.is_empty() || !extra.is_empty())
    {
        // kubectl drops these silently without `as`, so requests would go out as the real
        // user, not as the narrower identity the file asks for: refused instead.
        return Err(Error::Config(format!(
            "{what}: as-uid, as-groups or as-user-extra without `as` (the user to impersonate)"
        )));
    }
    cc.impersonate_user = user.impersonate.clone().filter(|u| !u.is_empty());
    cc.impersonate_uid = user.impersonate_uid.clone().filter(|u| !u.is_empty());
    cc.impersonate_groups = groups;
    cc.impersonate_extra = extra;
    Ok(())
}
