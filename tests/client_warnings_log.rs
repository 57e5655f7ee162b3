//! The default warning handler: each distinct server warning is logged once per client at
//! `warn` level, naming the request and the text, never the request body (here holding a
//! secret-looking value). A logger is process-wide, so this binary has one test.

mod common;

use std::sync::Mutex;

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, PostParams};

struct Capture;

static RECORDS: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if record.target().starts_with("kube_informer") {
            RECORDS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((record.level(), record.args().to_string()));
        }
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture;

const BODY_SECRET: &str = "data-WARN-SECRET-31c9";

#[test]
fn each_distinct_warning_is_logged_once_per_client() {
    log::set_logger(&LOGGER).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let server = ApiServer::start();
    let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    let client = Client::new(server.client_config()).unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "lab", &cms);
    for i in 0..3 {
        api.create(
            &PostParams::default(),
            &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}")}, "data": {"k": BODY_SECRET}, "spec": {}}),
        )
        .unwrap();
    }
    // A clone shares the memory of what was logged.
    let clone: Api<DynamicObject> = Api::namespaced_with(client, "lab", &cms);
    clone
        .create(
            &PostParams::default(),
            &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm-x"}, "spec": {}}),
        )
        .unwrap();
    let records = RECORDS.lock().unwrap().clone();
    let warnings: Vec<&String> = records
        .iter()
        .filter(|(level, text)| *level == log::Level::Warn && text.contains("server warning"))
        .map(|(_, t)| t)
        .collect();
    assert_eq!(warnings.len(), 1, "{records:?}");
    assert!(
        warnings[0].contains(r#"unknown field "spec""#),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("POST /api/v1/namespaces/lab/configmaps"));
    assert!(
        records.iter().all(|(_, t)| !t.contains(BODY_SECRET)),
        "no request body in any log record"
    );

    // Another client logs it again (once).
    let other: Api<DynamicObject> =
        Api::namespaced_with(Client::new(server.client_config()).unwrap(), "lab", &cms);
    other
        .create(
            &PostParams::default(),
            &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm-y"}, "spec": {}}),
        )
        .unwrap();
    let count = RECORDS
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, t)| t.contains("server warning"))
        .count();
    assert_eq!(count, 2);
}
