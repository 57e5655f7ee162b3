//! The event recorder's failure log: each kind of failure (the HTTP status and reason) is
//! logged once, from the recorder's named thread, naming the request but never the bearer
//! token; every failure is counted. A logger is process-wide, so this binary has one test.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube_informer::controller::{EventRecorder, EventRecorderConfig, EventType, ObjectReference};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::Client;

const TOKEN: &str = "events-TOKEN-SECRET-8d2f";
const THREAD: &str = "ki/log-test/ev";

struct Capture;

/// (thread name, level, message) of every record of this crate.
static RECORDS: Mutex<Vec<(String, log::Level, String)>> = Mutex::new(Vec::new());

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if record.target().starts_with("kube_informer") {
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            RECORDS.lock().unwrap_or_else(|e| e.into_inner()).push((
                thread,
                record.level(),
                record.args().to_string(),
            ));
        }
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture;

#[test]
fn each_kind_of_failure_is_logged_once_without_the_token() {
    log::set_logger(&LOGGER).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let server = ApiServer::builder().token(TOKEN).start();
    let client = Client::new(server.client_config()).unwrap();
    for code in [403, 403, 403, 400] {
        server.inject(Target::Write, Fault::status(code));
    }
    let r = EventRecorder::start(
        client,
        EventRecorderConfig::new("example.com/log-test", "log-test-0"),
    )
    .unwrap();
    let about = ObjectReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: "lab".into(),
        name: "settings".into(),
        ..Default::default()
    };
    for i in 0..5 {
        r.record(&about, EventType::Warning, &format!("R{i}"), "Sync", "");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while r.stats().processed < 5 {
        assert!(Instant::now() < deadline, "gave up: {:?}", r.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    let stats = r.stats();
    assert_eq!((stats.failed, stats.created), (4, 1), "{stats:?}");
    r.stop();
    let records = RECORDS.lock().unwrap().clone();
    let ours: Vec<_> = records.iter().filter(|(t, _, _)| t == THREAD).collect();
    assert_eq!(ours.len(), 2, "one line per kind of failure: {ours:#?}");
    assert!(ours.iter().all(|(_, l, _)| *l == log::Level::Warn));
    assert!(ours[0].2.contains("create: 403 Forbidden"), "{}", ours[0].2);
    assert!(
        ours[1].2.contains("create: 400 BadRequest"),
        "{}",
        ours[1].2
    );
    assert!(ours[0]
        .2
        .contains("POST /apis/events.k8s.io/v1/namespaces/lab/events"));
    assert!(
        records.iter().all(|(_, _, m)| !m.contains(TOKEN)),
        "the token never appears in a log line"
    );
}
