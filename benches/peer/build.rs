//! Puts the locked versions of `kube` and `kube-informer` into the binary, so that every
//! report names exactly what it measured.

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    for (name, var) in [
        ("kube", "PEER_KUBE_VERSION"),
        ("kube-informer", "PEER_KUBE_INFORMER_VERSION"),
    ] {
        let version = lock
            .split("[[package]]")
            .find(|p| p.lines().any(|l| l == format!("name = \"{name}\"")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
            .map_or("?", |v| v.trim_end_matches('"'));
        println!("cargo:rustc-env={var}={version}");
    }
}
