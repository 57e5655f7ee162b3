//! The built-in resources as the captured discovery documents of kube-apiserver 1.36 list
//! them (`discovery_builtins.json`): discovery serves them (`discovery.rs`), and the store
//! names the kind of a built-in resource nobody registered from them. A leaf, so that the
//! store does not depend on discovery.

use serde_json::Value;

/// The captured aggregated discovery documents (`/api` and `/apis`).
pub(crate) const BUILTINS: &str = include_str!("discovery_builtins.json");

/// The kind of a built-in resource as the captured discovery documents name it
/// (`configmaps` -> `ConfigMap`), for objects of a resource nobody registered.
pub(crate) fn builtin_kind(group: &str, version: &str, plural: &str) -> Option<String> {
    static BUILTIN: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let builtins = BUILTIN.get_or_init(|| serde_json::from_str(BUILTINS).unwrap_or(Value::Null));
    let doc = if group.is_empty() { "api" } else { "apis" };
    let group_doc = builtins[doc]["items"]
        .as_array()?
        .iter()
        .find(|g| g["metadata"]["name"].as_str().unwrap_or("") == group)?;
    let version = group_doc["versions"]
        .as_array()?
        .iter()
        .find(|v| v["version"] == version)?;
    let resource = version["resources"]
        .as_array()?
        .iter()
        .find(|r| r["resource"] == plural)?;
    resource["responseKind"]["kind"].as_str().map(str::to_owned)
}
