//! Any text as a kubeconfig: parsing and building a configuration return a value or an
//! error, never panic.
#![no_main]

use kube_informer::config::{Config, Kubeconfig, KubeconfigOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(kc) = Kubeconfig::parse(text, "fuzz") {
        let _ = Config::from_parsed(&kc, &KubeconfigOptions::default());
        if let Some(first) = kc.contexts.first() {
            let options = KubeconfigOptions::new().context(&first.name);
            let _ = Config::from_parsed(&kc, &options);
        }
    }
});
