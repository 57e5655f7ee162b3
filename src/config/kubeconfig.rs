//! The kubeconfig file format, and merging several files the way kubectl does.
//!
//! Relative file paths inside a kubeconfig are resolved against that file's absolute folder
//! as soon as it is read, so a merged configuration never loses track of where a path came
//! from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::redact_url;
use crate::client::Secret;
use crate::error::{Error, Result};

/// A parsed kubeconfig (one file, or several merged).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Kubeconfig {
    /// The context used when none is chosen.
    #[serde(rename = "current-context", default)]
    pub current_context: Option<String>,
    /// Named clusters.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub clusters: Vec<NamedCluster>,
    /// Named users (credentials).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub users: Vec<NamedUser>,
    /// Named contexts (cluster + user + namespace).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub contexts: Vec<NamedContext>,
    /// Where this configuration was read from.
    #[serde(skip)]
    pub sources: Vec<PathBuf>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// A cluster entry.
#[derive(Clone, Debug, Deserialize)]
pub struct NamedCluster {
    /// Its name.
    pub name: String,
    /// Its settings.
    #[serde(default)]
    pub cluster: Cluster,
}

/// How to reach a cluster. `Debug` hides any `user:password@` in `server` and `proxy-url`.
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// API server URL.
    pub server: Option<String>,
    /// CA bundle file.
    pub certificate_authority: Option<String>,
    /// CA bundle, base64 PEM (wins over the file).
    pub certificate_authority_data: Option<String>,
    /// Skip server certificate verification.
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
    /// Name to verify the server certificate against.
    pub tls_server_name: Option<String>,
    /// HTTP proxy. When unset, `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` apply (see
    /// [`ClientConfig::proxy`](crate::client::ClientConfig::proxy)).
    pub proxy_url: Option<String>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |u: &Option<String>| u.as_deref().map(redact_url);
        f.debug_struct("Cluster")
            .field("server", &redacted(&self.server))
            .field("certificate_authority", &self.certificate_authority)
            .field(
                "certificate_authority_data",
                &self
                    .certificate_authority_data
                    .as_ref()
                    .map(|d| format!("<{} bytes>", d.len())),
            )
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("tls_server_name", &self.tls_server_name)
            .field("proxy_url", &redacted(&self.proxy_url))
            .finish()
    }
}

/// A user entry.
#[derive(Clone, Debug, Deserialize)]
pub struct NamedUser {
    /// Its name.
    pub name: String,
    /// Its credentials.
    #[serde(default)]
    pub user: AuthInfo,
    /// The file this entry was read from (`None` for YAML given in memory): an
    /// `auth-provider` writes refreshed tokens back there, as kubectl does.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// Credentials. Secrets stay [`Secret`]s, so `Debug` shows none of them.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AuthInfo {
    /// Bearer token.
    pub token: Option<Secret>,
    /// File holding a bearer token (re-read when it changes).
    #[serde(rename = "tokenFile")]
    pub token_file: Option<String>,
    /// Client certificate file.
    pub client_certificate: Option<String>,
    /// Client certificate, base64 PEM.
    pub client_certificate_data: Option<String>,
    /// Client key file.
    pub client_key: Option<String>,
    /// Client key, base64 PEM.
    pub client_key_data: Option<Secret>,
    /// Basic auth user.
    pub username: Option<String>,
    /// Basic auth password.
    pub password: Option<Secret>,
    /// User to impersonate.
    #[serde(rename = "as")]
    pub impersonate: Option<String>,
    /// Groups to impersonate.
    #[serde(rename = "as-groups", default)]
    pub impersonate_groups: Option<Vec<String>>,
    /// UID to impersonate (`Impersonate-Uid`).
    #[serde(rename = "as-uid")]
    pub impersonate_uid: Option<String>,
    /// Extra fields of the impersonated user (`Impersonate-Extra-<key>` headers).
    #[serde(rename = "as-user-extra", default)]
    pub impersonate_user_extra: Option<BTreeMap<String, Vec<String>>>,
    /// Exec credential plugin.
    pub exec: Option<ExecConfig>,
    /// A built-in authentication provider (`oidc`; `gcp` and `azure` were removed from
    /// kubectl and give an error naming the exec plugin that replaced them).
    pub auth_provider: Option<AuthProviderConfig>,
}

/// An `auth-provider` block: the provider's name and its string settings.
///
/// `Debug` shows every key but the values of non-secret ones only (`idp-issuer-url`,
/// `client-id`, `idp-certificate-authority`, `extra-scopes`); `id-token`, `refresh-token`,
/// `client-secret` and any key not known to be harmless show as `<redacted>`.
#[derive(Clone, Default, Deserialize)]
pub struct AuthProviderConfig {
    /// `oidc`, `gcp`, `azure`, ...
    #[serde(default)]
    pub name: String,
    /// Its settings (`idp-issuer-url`, `client-id`, `id-token`, ...).
    #[serde(default, deserialize_with = "null_as_empty_map")]
    pub config: BTreeMap<String, String>,
}

/// `auth-provider` settings whose values may be shown.
const SHOWN_PROVIDER_KEYS: [&str; 4] = [
    "idp-issuer-url",
    "client-id",
    "idp-certificate-authority",
    "extra-scopes",
];

impl std::fmt::Debug for AuthProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Config<'a>(&'a BTreeMap<String, String>);
        impl std::fmt::Debug for Config<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut m = f.debug_map();
                for (k, v) in self.0 {
                    if SHOWN_PROVIDER_KEYS.contains(&k.as_str()) {
                        m.entry(k, v);
                    } else {
                        m.entry(k, &format_args!("<redacted>"));
                    }
                }
                m.finish()
            }
        }
        f.debug_struct("AuthProviderConfig")
            .field("name", &self.name)
            .field("config", &Config(&self.config))
            .finish()
    }
}

fn null_as_empty_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<String, String>, D::Error> {
    Ok(Option::<BTreeMap<String, String>>::deserialize(d)?.unwrap_or_default())
}

/// An exec credential plugin (`client.authentication.k8s.io/v1` or `v1beta1`).
///
/// `Debug` shows the command, how many arguments it has and the names of its environment
/// variables, never the arguments or the values (they often carry credentials).
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `.../v1beta1`.
    pub api_version: Option<String>,
    /// The program.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: Option<Vec<ExecEnvVar>>,
    /// `Never`, `IfAvailable` or `Always`.
    pub interactive_mode: Option<String>,
    /// Pass the cluster's details in `KUBERNETES_EXEC_INFO`.
    #[serde(default)]
    pub provide_cluster_info: bool,
    /// Shown to the user when the plugin cannot be started (e.g. how to install it).
    pub install_hint: Option<String>,
}

impl std::fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecConfig")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field(
                "args",
                &self
                    .args
                    .as_ref()
                    .map(|a| format!("<{} redacted>", a.len())),
            )
            .field("env", &self.env)
            .field("interactive_mode", &self.interactive_mode)
            .field("provide_cluster_info", &self.provide_cluster_info)
            .field("install_hint", &self.install_hint)
            .finish()
    }
}

/// One environment variable of an exec plugin. `Debug` shows the name only.
#[derive(Clone, Default, Deserialize)]
pub struct ExecEnvVar {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

impl std::fmt::Debug for ExecEnvVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecEnvVar")
            .field("name", &self.name)
            .field("value", &format_args!("<redacted>"))
            .finish()
    }
}

/// A context entry.
#[derive(Clone, Debug, Deserialize)]
pub struct NamedContext {
    /// Its name.
    pub name: String,
    /// Its settings.
    #[serde(default)]
    pub context: Context,
}

/// A cluster, a user and a namespace.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Context {
    /// Cluster name.
    #[serde(default)]
    pub cluster: String,
    /// User name.
    #[serde(default)]
    pub user: String,
    /// Default namespace.
    pub namespace: Option<String>,
}

fn resolve(base: &Path, p: &mut Option<String>) {
    if let Some(path) = p {
        if !path.is_empty() && Path::new(path).is_relative() {
            *path = base.join(&*path).to_string_lossy().into_owned();
        }
    }
}

/// What is wrong with a kubeconfig's YAML, without the value found there: serde quotes it
/// (`invalid type: string "--token=…", expected a sequence`), and in a kubeconfig a value
/// out of place is often a token, a password or a key. Kept: where (the path of keys), what
/// was found (its type), what was expected, and a missing field's name (ours).
fn yaml_error_summary(e: &serde_yaml::Error) -> String {
    let text = e.to_string();
    let text = match e.location() {
        Some(l) => text
            .strip_suffix(&format!(" at line {} column {}", l.line(), l.column()))
            .unwrap_or(&text),
        None => &text,
    };
    if text.contains("missing field `") {
        return text.to_owned();
    }
    let (found, expected) = text.split_at(text.find(", expected ").unwrap_or(text.len()));
    let mut out = String::with_capacity(found.len());
    let mut chars = found.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                // A quoted string, escapes included: left out.
                let mut escaped = false;
                for c in chars.by_ref() {
                    if !escaped && c == '"' {
                        break;
                    }
                    escaped = !escaped && c == '\\';
                }
                out.push_str("(value not shown)");
            }
            '`' => {
                for c in chars.by_ref() {
                    if c == '`' {
                        break;
                    }
                }
                out.push_str("(value not shown)");
            }
            c => out.push(c),
        }
    }
    out.push_str(expected);
    out
}

impl Kubeconfig {
    /// Parses kubeconfig YAML; `origin` names it in errors.
    pub fn parse(yaml: &str, origin: &str) -> Result<Kubeconfig> {
        if yaml.trim().is_empty() {
            return Ok(Kubeconfig::default());
        }
        let kc: Kubeconfig = serde_yaml::from_str(yaml).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!(" at line {} column {}", l.line(), l.column()))
                .unwrap_or_default();
            let why = yaml_error_summary(&e);
            Error::Config(format!("kubeconfig {origin}: malformed YAML{at}: {why}"))
        })?;
        kc.no_duplicate_names()
            .map_err(|m| Error::Config(format!("kubeconfig {origin}: {m}")))?;
        Ok(kc)
    }

    /// client-go's rule for one file: a name used twice in `clusters`, `users` or
    /// `contexts` makes the file an error (its conversion of the lists into maps fails,
    /// and kubectl with it), rather than one entry silently winning. Across files the first
    /// file wins instead ([`merge`](Self::merge)). The message names the list and the
    /// name, never an entry's settings.
    fn no_duplicate_names(&self) -> std::result::Result<(), String> {
        fn check<'a>(
            list: &str,
            names: impl Iterator<Item = &'a str>,
        ) -> std::result::Result<(), String> {
            let mut seen = std::collections::HashSet::new();
            for name in names {
                if !seen.insert(name) {
                    return Err(format!(
                        "duplicate name {name:?} in {list} (client-go refuses such a file)"
                    ));
                }
            }
            Ok(())
        }
        check("clusters", self.clusters.iter().map(|c| c.name.as_str()))?;
        check("users", self.users.iter().map(|u| u.name.as_str()))?;
        check("contexts", self.contexts.iter().map(|c| c.name.as_str()))
    }

    /// Reads and parses one file, resolving its relative paths against its folder.
    pub fn read(path: &Path) -> Result<Kubeconfig> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Config(format!("kubeconfig {}: cannot read: {e}", path.display()))
        })?;
        let mut kc = Self::parse(&text, &path.display().to_string())?;
        // Absolute, as client-go's `ResolveLocalPaths` makes them: a file named relative to
        // a relatively named kubeconfig must stay that file after the program changes its
        // working directory (a token file read later, a plugin run later, the write-back).
        let path = &std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let base = path.parent().unwrap_or(Path::new("."));
        for c in &mut kc.clusters {
            resolve(base, &mut c.cluster.certificate_authority);
        }
        for u in &mut kc.users {
            resolve(base, &mut u.user.client_certificate);
            resolve(base, &mut u.user.client_key);
            resolve(base, &mut u.user.token_file);
            if let Some(exec) = &mut u.user.exec {
                // Like kubectl: a command with a path separator is relative to the file.
                if exec.command.contains('/') {
                    let mut c = Some(exec.command.clone());
                    resolve(base, &mut c);
                    exec.command = c.unwrap_or_default();
                }
            }
        }
        for u in &mut kc.users {
            u.source = Some(path.to_path_buf());
        }
        kc.sources = vec![path.to_path_buf()];
        Ok(kc)
    }

    /// Merges `later` into `self`: for every named entry and for `current-context`, the
    /// first file that sets it wins.
    pub fn merge(&mut self, later: Kubeconfig) {
        if self.current_context.as_deref().is_none_or(str::is_empty) {
            self.current_context = later.current_context;
        }
        for c in later.clusters {
            if !self.clusters.iter().any(|x| x.name == c.name) {
                self.clusters.push(c);
            }
        }
        for u in later.users {
            if !self.users.iter().any(|x| x.name == u.name) {
                self.users.push(u);
            }
        }
        for c in later.contexts {
            if !self.contexts.iter().any(|x| x.name == c.name) {
                self.contexts.push(c);
            }
        }
        self.sources.extend(later.sources);
    }

    /// A description of where this came from, for errors.
    pub fn origin(&self) -> String {
        if self.sources.is_empty() {
            "(inline)".into()
        } else {
            self.sources
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(":")
        }
    }
}
