//! `ApiServer`'s kubelet side as a test sees it: pods and nodes to run on, and the
//! containers' logs. The state and the serving are the kubelet room's (`kubelet/pods.rs`,
//! `kubelet/pod_logs.rs`); here are only the public methods, so that the room does not
//! depend on the server.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::pod_logs::{terminated_status, PodLogs};
use super::pods::{merge, nodes, pods};
use super::server::ApiServer;
use crate::api::Status;
use crate::pod::LogTime;

impl ApiServer {
    /// Creates a Running, Ready pod `namespace/name` with these containers (running) on the
    /// node `lab-node`; returns it as stored. Its logs start empty
    /// ([`append_log`](Self::append_log)). A failed create answers its Status
    /// (`AlreadyExists` when the name is taken).
    pub fn add_pod(
        &self,
        namespace: &str,
        name: &str,
        containers: &[&str],
    ) -> Result<Value, Status> {
        let extra = json!({"spec": {"containers": containers.iter()
            .map(|c| json!({"name": c, "image": "busybox"})).collect::<Vec<_>>()},
            "status": {"containerStatuses": containers.iter()
            .map(|c| json!({"name": c, "ready": true, "restartCount": 0, "image": "busybox",
                "state": {"running": {"startedAt": "2026-11-26T11:48:00Z"}}})).collect::<Vec<_>>()}});
        self.add_pod_on(namespace, name, "lab-node", extra)
    }

    /// Creates a Running, Ready pod `namespace/name` with one container `main` on `node`
    /// (`""`: not scheduled, `Pending`), with `extra` merged in (a JSON merge patch: labels,
    /// ownerReferences, volumes, other containers...); returns it as stored, or the Status of
    /// the failed create (`AlreadyExists` when the name is taken).
    pub fn add_pod_on(
        &self,
        namespace: &str,
        name: &str,
        node: &str,
        extra: Value,
    ) -> Result<Value, Status> {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
                    "image": "busybox", "state": {"running": {"startedAt": "2026-11-26T11:48:00Z"}}}]},
        });
        if node.is_empty() {
            pod["status"] = json!({"phase": "Pending"});
        } else {
            pod["spec"]["nodeName"] = json!(node);
        }
        merge(&mut pod, &extra);
        self.create(&pods(), pod)
    }

    /// Creates a schedulable node; returns it as stored, or the Status of the failed create
    /// (`AlreadyExists` when the name is taken).
    pub fn add_node(&self, name: &str) -> Result<Value, Status> {
        self.create(
            &nodes(),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
                "labels": {"kubernetes.io/hostname": name}}, "spec": {},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        )
    }

    /// Appends lines (one per `\n`-separated part) to a container's log, timed now; a
    /// follow in progress sends them at once.
    pub fn append_log(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        let now = LogTime::from_system_time(SystemTime::now());
        self.append_log_at(namespace, pod, container, now, text);
    }

    /// Appends lines timed `time` (the kubelet's times never go backwards: give them in
    /// order). For tests of several lines within one second, identical lines included.
    pub fn append_log_at(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        time: LogTime,
        text: &str,
    ) {
        self.pod_logs()
            .append_at(namespace, pod, container, time, text);
    }

    /// Writes `text` timed now as the container's stdout does: lines end where `text` has a
    /// newline, and what follows the last one stays an open line (no newline sent; the next
    /// write continues it, without a time of its own). `write_log(.., "done")` then
    /// [`terminate_container`](Self::terminate_container) is `printf done; exit`.
    pub fn write_log(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        self.pod_logs().write(namespace, pod, container, text);
    }

    /// Sets the log of the container's previous (terminated) instance, as after a restart:
    /// `previous=true` reads it.
    pub fn set_previous_log(&self, namespace: &str, pod: &str, container: &str, lines: &[&str]) {
        self.pod_logs()
            .set_previous(namespace, pod, container, lines);
    }

    /// The container exits with `exit_code`: its status in the pod says `terminated`, and
    /// every follow of its log ends cleanly after the last line.
    pub fn terminate_container(&self, namespace: &str, pod: &str, container: &str, exit_code: i32) {
        let pods = pods();
        if let Ok(mut p) = self.get(&pods, Some(namespace), pod) {
            terminated_status(&mut p, container, exit_code);
            let _ = self.update(&pods, p);
        }
        self.pod_logs().terminate(namespace, pod, container);
    }

    /// A kubelet restart: every log follow being served drops at once (its chunked body cut,
    /// no last chunk). The logs stay; new requests are served as before.
    pub fn drop_log_streams(&self) {
        self.pod_logs().drop_streams();
    }

    /// The next log answer (follow or not) is cut after `bytes` bytes of its body: the
    /// connection drops with no end of the chunked body, as when the kubelet restarts
    /// mid-read.
    pub fn cut_next_log(&self, bytes: usize) {
        self.pod_logs().cut_next(bytes);
    }

    /// How many log follows are being served now (for tests that wait for one to start).
    pub fn log_streams_open(&self) -> usize {
        self.pod_logs().streams_open()
    }
}

impl ApiServer {
    fn pod_logs(&self) -> &PodLogs {
        &self.shared().pod_logs
    }
}
