//! `kubectl get` (`cargo run --example kubectl -- get ...`), built from the four client kinds of client-go:
//!
//! - **discovery** (`Discovery`, `RestMapper`): `RESOURCE` may be a plural (`pods`), a
//!   singular (`pod`), a short name (`po`, `deploy`, or a custom resource's own, `wdg`), a kind
//!   (`Deployment`), `resource.group` (`deployments.apps`) or `GROUP/VERSION/KIND`; it is
//!   resolved against the server's discovery documents, cached on disk where kubectl keeps
//!   them (`~/.kube/cache/discovery/<host>/`, `$KUBECACHEDIR`, or `--cache-dir DIR` as
//!   kubectl's flag: `DIR/discovery/<host>/`) for 10 minutes. A name the server does not have
//!   is an error naming the close matches;
//! - the **RESTClient** (`Client::request`): `get RESOURCE NAME -o json|yaml` fetches the one
//!   object with a raw GET and prints what the server sent (keys sorted and `managedFields`
//!   hidden, like kubectl);
//! - the **dynamic client** (`Api<DynamicObject>` for the mapped `ApiResource`): lists, page by
//!   page (500 a page), for any resource, custom ones included; with `--metadata-only`,
//!   `Api<PartialObjectMetadata>` (the server sends metadata only);
//! - the **typed clients**: with the `k8s-openapi` cargo feature, pods, configmaps,
//!   namespaces, nodes and deployments are listed through `Api<k8s_openapi::...>` (see
//!   `typed_list`; `cargo run --example kubectl --features k8s-openapi,k8s-openapi/v1_35 -- get po`);
//!   every other resource through the dynamic client.
//!
//! `--watch` (`-w`) then prints each change through a shared informer (dynamic, or metadata
//! only) as `ADDED`, `MODIFIED` or `DELETED` lines, until Ctrl-C or `--watch-for N` events
//! (`--watch-for 10s`: seconds).
//!
//! ```text
//! $ cargo run --example kubectl -- get po -A
//! get: no cluster configured; running against the embedded test API server (demo)
//! NAMESPACE   NAME     READY   STATUS              RESTARTS   AGE
//! default     web-0    1/1     Running             0          0s
//! lab         web-1    1/1     Running             2          0s
//! lab         web-2    0/1     ContainerCreating   0          0s
//! shop        cart-0   2/2     Running             0          0s
//! $ cargo run --example kubectl -- get wdg -A
//! NAMESPACE   NAME       AGE
//! default     gizmo      0s
//! lab         sprocket   0s
//! $ cargo run --example kubectl -- get po -w --watch-for 3
//! NAME    READY   STATUS    RESTARTS   AGE
//! web-0   1/1     Running   0          0s
//! ADDED    demo-watch   0/1     ContainerCreating   0          0s
//! MODIFIED demo-watch   1/1     Running             0          0s
//! DELETED  demo-watch   1/1     Running             0          1s
//! $ cargo run --example kubectl -- get deploy -A --metadata-only -o name
//! deployment.apps/web
//! deployment.apps/web
//! deployment.apps/cart
//! ```
//!
//! (The banner line is on stderr and repeats on every run; it is shown once here.)
//!
//! Flags: `-n NS`, `-A` (all namespaces), `-l SELECTOR`, `-o name|json|yaml`,
//! `--metadata-only`, `-w`, `--watch-for N|Ns`, `--cache-dir DIR`, `--kubeconfig PATH`,
//! `--context NAME`, `--demo`, `-v` (say where discovery came from: memory, disk or server).
//! Bad input (an unknown resource, a bad selector, a bad flag) is one line on stderr and exit
//! code 1.
//!
//! With a kubeconfig (`$KUBECONFIG`, `~/.kube/config`) or inside a pod it reads that
//! cluster. With none (or `--demo`) it says so on stderr and runs against the
//! embedded `testing::ApiServer`, seeded with pods, deployments, configmaps, nodes,
//! namespaces and a custom resource (`widgets.lab.example.com`, short name `wdg`); in demo
//! mode the discovery cache goes to a temporary directory unless `--cache-dir` is given, and
//! `--watch` makes one scripted change (an object created, changed, deleted; with a NAME,
//! that object relabelled) so the watch prints something.
//!
//! Simplifications: the extra columns are kubectl's for pods (READY, STATUS, RESTARTS),
//! deployments, nodes, namespaces and configmaps only; no `-o wide`, custom columns or
//! server-side tables (`Accept: ...;as=Table`); `-o json|yaml` sorts keys and hides
//! `managedFields` like kubectl, but fills in no defaults; a watch prints one line per change
//! it sees after the table: a change made between the table's list and the informer's own
//! list shows as `ADDED` / `MODIFIED` (by resourceVersion) or `DELETED` (gone from the
//! informer's first list), so none is lost, but a create and delete both in that gap shows
//! nothing; `--watch-for` counts those lines. The watch goes through the dynamic (or
//! metadata-only) informer also when the table came from a typed client. With `-w`, Ctrl-C
//! is handled once the table is printed (before that it ends the program at once, as usual).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use kube_informer::api::{
    ApiResource, DynamicObject, LabelSelector, Object, PartialObjectMetadata, Requirement,
    METADATA_ACCEPT,
};
use kube_informer::cache::{
    FactoryOptions, SharedIndexInformer, SharedInformerFactory, StopSignal,
};
use kube_informer::config::{parse_rfc3339, Config};
use kube_informer::discovery::{DiskCache, Origin, RestMapper, ServerResource};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, ListParams, Method};
use serde_json::{json, Value};

const USAGE: &str = "usage: get [-n NS | -A] [-l SELECTOR] [-o name|json|yaml] [--metadata-only] \
[-w [--watch-for N|Ns]] [--cache-dir DIR] [--kubeconfig PATH] [--context NAME] [--demo] [-v] \
RESOURCE [NAME]";

/// How long a watch waits for its informer's first list before giving up.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------
// Arguments

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Output {
    #[default]
    Table,
    Name,
    Json,
    Yaml,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WatchFor {
    Events(u64),
    Time(Duration),
}

#[derive(Debug, Default)]
struct Args {
    resource: String,
    name: Option<String>,
    namespace: Option<String>,
    all_namespaces: bool,
    selector: Option<String>,
    output: Output,
    metadata_only: bool,
    watch: bool,
    watch_for: Option<WatchFor>,
    cache_dir: Option<PathBuf>,
    kubeconfig: Option<String>,
    context: Option<String>,
    demo: bool,
    verbose: bool,
}

fn parse_args(argv: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut args = Args::default();
    let mut positional = Vec::new();
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        // `--flag=value` as well as `--flag value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it.next().ok_or_else(|| format!("{name} needs a value")),
            }
        };
        match flag.as_str() {
            "-n" | "--namespace" => args.namespace = Some(value("--namespace")?),
            "-A" | "--all-namespaces" => args.all_namespaces = true,
            "-l" | "--selector" => args.selector = Some(value("--selector")?),
            "-o" | "--output" => {
                let v = value("--output")?;
                args.output = match v.as_str() {
                    "name" => Output::Name,
                    "json" => Output::Json,
                    "yaml" => Output::Yaml,
                    _ => return Err(format!("--output {v:?}: expected name, json or yaml")),
                }
            }
            "--metadata-only" => args.metadata_only = true,
            "-w" | "--watch" => args.watch = true,
            "--watch-for" => {
                let v = value("--watch-for")?;
                let positive = |n: &str| n.parse::<u64>().ok().filter(|&n| n > 0);
                let parsed = match v.strip_suffix('s') {
                    Some(secs) => positive(secs).map(|s| WatchFor::Time(Duration::from_secs(s))),
                    None => positive(&v).map(WatchFor::Events),
                };
                args.watch_for = Some(parsed.ok_or_else(|| {
                    format!("--watch-for {v:?}: expected a number of events (3) or seconds (10s)")
                })?);
                args.watch = true;
            }
            "--cache-dir" => args.cache_dir = Some(PathBuf::from(value("--cache-dir")?)),
            "--kubeconfig" => args.kubeconfig = Some(value("--kubeconfig")?),
            "--context" => args.context = Some(value("--context")?),
            "--demo" => args.demo = true,
            "-v" | "--verbose" => args.verbose = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            f if f.starts_with('-') && f.len() > 1 => {
                return Err(format!("unknown flag {f:?}\n{USAGE}"))
            }
            _ => positional.push(arg),
        }
    }
    let mut positional = positional.into_iter();
    args.resource = positional
        .next()
        .ok_or_else(|| format!("which resource? e.g. `get pods`\n{USAGE}"))?;
    args.name = positional.next();
    if let Some(extra) = positional.next() {
        return Err(format!("one NAME at most (got {extra:?} too)\n{USAGE}"));
    }
    if let Some(name) = &args.name {
        if name.is_empty()
            || name
                .chars()
                .any(|c| matches!(c, '/' | '?' | '#' | '%') || c.is_whitespace())
        {
            return Err(format!("{name:?} is not an object name"));
        }
        if args.all_namespaces {
            return Err("a resource cannot be retrieved by name across all namespaces".into());
        }
    }
    if let Some(sel) = &args.selector {
        LabelSelector::parse(sel).map_err(|e| format!("--selector {sel:?}: {e}"))?;
    }
    Ok(args)
}

// ---------------------------------------------------------------------------------------
// Rows: what a table line, a name line or a watch line shows of one object

/// One object as printed.
#[derive(Clone, Debug)]
struct Row {
    namespace: String,
    name: String,
    resource_version: String,
    created: Option<String>,
    /// The kind's own columns ([`extra_headers`]).
    cells: Vec<String>,
    /// The object for `-o json|yaml` (only built for those).
    object: Option<Value>,
}

impl Row {
    fn key(&self) -> String {
        if self.namespace.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }
}

/// What the listing and the watch need of an object of any of the three kinds of client.
trait Listed {
    fn row(&self, ar: &ApiResource, with_object: bool) -> Row;
}

fn base_row(meta: &kube_informer::api::ObjectMeta) -> Row {
    Row {
        namespace: meta.namespace().to_owned(),
        name: meta.name().to_owned(),
        resource_version: meta.resource_version().to_owned(),
        created: meta.creation_timestamp.clone(),
        cells: Vec::new(),
        object: None,
    }
}

impl Listed for DynamicObject {
    fn row(&self, ar: &ApiResource, with_object: bool) -> Row {
        let mut row = base_row(&self.metadata);
        row.cells = dynamic_cells(ar, self);
        if with_object {
            let mut obj = self.clone();
            obj.metadata.managed_fields = None;
            obj.api_version
                .get_or_insert_with(|| ar.api_version().into());
            obj.kind.get_or_insert_with(|| ar.kind.as_str().into());
            row.object = serde_json::to_value(&obj).ok();
        }
        row
    }
}

impl Listed for PartialObjectMetadata {
    fn row(&self, _ar: &ApiResource, with_object: bool) -> Row {
        let mut row = base_row(&self.metadata);
        if with_object {
            let mut obj = self.clone();
            obj.metadata.managed_fields = None;
            row.object = serde_json::to_value(&obj).ok();
        }
        row
    }
}

/// The kind's own columns, as kubectl prints them; none for other kinds and for metadata
/// only.
fn extra_headers(ar: &ApiResource, metadata_only: bool) -> &'static [&'static str] {
    if metadata_only {
        return &[];
    }
    match (ar.group.as_str(), ar.kind.as_str()) {
        ("", "Pod") => &["READY", "STATUS", "RESTARTS"],
        ("apps", "Deployment") => &["READY", "UP-TO-DATE", "AVAILABLE"],
        ("", "Node") | ("", "Namespace") => &["STATUS"],
        ("", "ConfigMap") => &["DATA"],
        _ => &[],
    }
}

/// [`extra_headers`]' cells of a dynamic object: its `spec` and `status` decoded as JSON.
fn dynamic_cells(ar: &ApiResource, obj: &DynamicObject) -> Vec<String> {
    if extra_headers(ar, false).is_empty() {
        return Vec::new();
    }
    let field = |name: &str| -> Value {
        obj.decode_field::<Value>(name)
            .ok()
            .flatten()
            .unwrap_or(Value::Null)
    };
    kind_cells(ar, field, obj.metadata.deletion_timestamp.is_some())
}

/// [`extra_headers`]' cells from the object's top-level fields (`field("status")`).
fn kind_cells(ar: &ApiResource, field: impl Fn(&str) -> Value, deleting: bool) -> Vec<String> {
    match ar.kind.as_str() {
        "Pod" => pod_cells(&field("spec"), &field("status"), deleting),
        "Deployment" => deployment_cells(&field("spec"), &field("status")),
        "Node" => vec![node_status(&field("status"))],
        "Namespace" => vec![field("status")["phase"]
            .as_str()
            .unwrap_or("Active")
            .to_owned()],
        "ConfigMap" => {
            let count = |v: Value| v.as_object().map_or(0, |m| m.len());
            vec![(count(field("data")) + count(field("binaryData"))).to_string()]
        }
        _ => Vec::new(),
    }
}

/// READY (ready/all containers), STATUS (a waiting or terminated reason, else the phase;
/// `Terminating` once deleted), RESTARTS.
fn pod_cells(spec: &Value, status: &Value, deleting: bool) -> Vec<String> {
    let statuses = status["containerStatuses"].as_array();
    let total = spec["containers"].as_array().map_or(0, Vec::len);
    let ready = statuses.map_or(0, |s| {
        s.iter()
            .filter(|c| c["ready"].as_bool() == Some(true))
            .count()
    });
    let restarts: u64 = statuses.map_or(0, |s| {
        s.iter().filter_map(|c| c["restartCount"].as_u64()).sum()
    });
    let reason = statuses.and_then(|s| {
        s.iter().find_map(|c| {
            c["state"]["waiting"]["reason"]
                .as_str()
                .or(c["state"]["terminated"]["reason"].as_str())
        })
    });
    let state = if deleting {
        "Terminating"
    } else {
        reason.unwrap_or(status["phase"].as_str().unwrap_or("Unknown"))
    };
    vec![
        format!("{ready}/{total}"),
        state.to_owned(),
        restarts.to_string(),
    ]
}

fn deployment_cells(spec: &Value, status: &Value) -> Vec<String> {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    vec![
        format!(
            "{}/{}",
            n(&status["readyReplicas"]),
            spec["replicas"].as_u64().unwrap_or(1)
        ),
        n(&status["updatedReplicas"]).to_string(),
        n(&status["availableReplicas"]).to_string(),
    ]
}

fn node_status(status: &Value) -> String {
    let ready = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["status"].as_str());
    match ready {
        Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }
    .to_owned()
}

/// kubectl's short age: `45s`, `3m12s`, `25m`, `5h3m`, `20h`, `3d4h`, `120d`, `3y40d`.
fn age(created: Option<&str>, now: SystemTime) -> String {
    let Some(at) = created.and_then(parse_rfc3339) else {
        return "<unknown>".into();
    };
    let s = now.duration_since(at).unwrap_or_default().as_secs();
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => format!("{m}m{}s", s % 60),
        _ if h < 3 => format!("{m}m"),
        _ if h < 8 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if d < 8 => format!("{d}d{}h", h % 24),
        _ if d < 365 * 2 => format!("{d}d"),
        _ => format!("{}y{}d", d / 365, d % 365),
    }
}

// ---------------------------------------------------------------------------------------
// Printing

/// How rows are printed: the columns, and their widths once a table was printed.
struct Printer {
    resource: ApiResource,
    output: Output,
    show_namespace: bool,
    headers: Vec<&'static str>,
    widths: Vec<usize>,
}

impl Printer {
    fn new(ar: &ApiResource, args: &Args) -> Printer {
        let show_namespace = ar.namespaced && args.all_namespaces;
        let mut headers = Vec::new();
        if show_namespace {
            headers.push("NAMESPACE");
        }
        headers.push("NAME");
        headers.extend_from_slice(extra_headers(ar, args.metadata_only));
        headers.push("AGE");
        let widths = headers.iter().map(|h| h.len()).collect();
        Printer {
            resource: ar.clone(),
            output: args.output,
            show_namespace,
            headers,
            widths,
        }
    }

    fn cells(&self, row: &Row, now: SystemTime) -> Vec<String> {
        let mut cells = Vec::with_capacity(self.headers.len());
        if self.show_namespace {
            cells.push(row.namespace.clone());
        }
        cells.push(row.name.clone());
        let extra = self.headers.len() - cells.len() - 1;
        for i in 0..extra {
            cells.push(row.cells.get(i).cloned().unwrap_or_default());
        }
        cells.push(age(row.created.as_deref(), now));
        cells
    }

    /// Columns only grow, so that later lines stay aligned with earlier ones where they can.
    fn widen(&mut self, cells: &[String]) {
        for (w, c) in self.widths.iter_mut().zip(cells) {
            *w = (*w).max(c.len());
        }
    }

    fn line(&self, cells: &[String]) -> String {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                let w = self.widths.get(i).copied().unwrap_or(0);
                out.push_str(&format!("{c:<w$}   "));
            }
        }
        out
    }

    /// `pod/web-1`, `deployment.apps/web`, `widget.lab.example.com/gizmo`.
    fn name_of(&self, row: &Row) -> String {
        let kind = self.resource.kind.to_ascii_lowercase();
        if self.resource.group.is_empty() {
            format!("{kind}/{}", row.name)
        } else {
            format!("{kind}.{}/{}", self.resource.group, row.name)
        }
    }

    /// The table (or names, or documents) of a list; `single`: one object asked for by name.
    fn print_list(&mut self, rows: &[Row], where_: &str, single: bool) {
        if rows.is_empty() && self.output != Output::Json && self.output != Output::Yaml {
            eprintln!("No resources found{where_}.");
            return;
        }
        match self.output {
            Output::Table => {
                let now = SystemTime::now();
                let lines: Vec<Vec<String>> = rows.iter().map(|r| self.cells(r, now)).collect();
                for cells in &lines {
                    self.widen(cells);
                }
                let header: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
                println!("{}", self.line(&header));
                for cells in &lines {
                    println!("{}", self.line(cells));
                }
            }
            Output::Name => {
                for r in rows {
                    println!("{}", self.name_of(r));
                }
            }
            Output::Json | Output::Yaml => {
                let items: Vec<Value> = rows.iter().filter_map(|r| r.object.clone()).collect();
                let doc = if single && items.len() == 1 {
                    items.into_iter().next().unwrap_or(Value::Null)
                } else {
                    json!({"apiVersion": "v1", "kind": "List", "items": items,
                           "metadata": {"resourceVersion": ""}})
                };
                print_document(&doc, self.output);
            }
        }
    }

    /// One watch line: `ADDED   lab   web-4   0/1   Pending   0   0s` (the table's columns
    /// after the event), or `ADDED pod/web-4`, or the event as one JSON line / YAML document.
    fn print_event(&mut self, event: &str, row: &Row) {
        match self.output {
            Output::Table => {
                let cells = self.cells(row, SystemTime::now());
                self.widen(&cells);
                println!("{event:<9}{}", self.line(&cells));
            }
            Output::Name => println!("{event} {}", self.name_of(row)),
            Output::Json => {
                let doc = json!({"type": event, "object": row.object});
                println!("{doc}");
            }
            Output::Yaml => {
                let doc = json!({"type": event, "object": row.object});
                print_document(&doc, Output::Yaml);
            }
        }
    }
}

fn print_document(doc: &Value, output: Output) {
    if output == Output::Yaml {
        match serde_yaml::to_string(doc) {
            Ok(y) => print!("---\n{y}"),
            Err(e) => eprintln!("get: YAML: {e}"),
        }
    } else {
        match serde_json::to_string_pretty(doc) {
            Ok(j) => println!("{j}"),
            Err(e) => eprintln!("get: JSON: {e}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The four clients

/// Discovery (kind 1 of 4): the mapper, over kubectl's disk cache.
fn mapper(client: &Client, cache_root: Option<PathBuf>, verbose: bool) -> RestMapper {
    let discovery = match cache_root {
        Some(root) => {
            let cache = DiskCache::new(root, client.server());
            if verbose {
                eprintln!("get: discovery cache {}", cache.dir().display());
            }
            client.discovery().with_disk_cache(cache)
        }
        None => client.discovery(),
    };
    RestMapper::new(discovery)
}

fn resolve(mapper: &RestMapper, query: &str, verbose: bool) -> Result<ServerResource, String> {
    if verbose {
        let (_, origin) = mapper
            .discovery()
            .data_with_origin()
            .map_err(|e| e.to_string())?;
        let from = match origin {
            Origin::Memory => "memory",
            Origin::Disk => "the disk cache",
            Origin::Server => "the server",
            _ => "elsewhere",
        };
        eprintln!("get: discovery from {from}");
    }
    mapper.resolve_resource(query).map_err(|e| e.to_string())
}

/// The RESTClient (kind 2 of 4): one object as the server sends it, for `-o json|yaml`.
fn get_raw(
    client: &Client,
    ar: &ApiResource,
    namespace: Option<&str>,
    name: &str,
    metadata_only: bool,
) -> Result<Value, String> {
    let path = format!("{}/{name}", ar.url_path(namespace));
    let mut request = client.request(Method::GET, &path);
    if metadata_only {
        request = request.accept(METADATA_ACCEPT);
    }
    let response = request.send().map_err(|e| e.to_string())?;
    let mut object: Value = response.json().map_err(|e| e.to_string())?;
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    Ok(object)
}

/// The dynamic client (kind 3 of 4), or metadata only: an `Api` for the mapped resource.
fn api_for<K: Object>(client: &Client, ar: &ApiResource, namespace: Option<&str>) -> Api<K> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    }
}

/// Every object, page by page (500 a page), or the one named.
fn list_rows<K: Object + Listed>(
    api: &Api<K>,
    ar: &ApiResource,
    name: Option<&str>,
    params: &ListParams,
    with_object: bool,
) -> Result<Vec<Row>, String> {
    if let Some(name) = name {
        let obj = api.get(name).map_err(|e| e.to_string())?;
        return Ok(vec![obj.row(ar, with_object)]);
    }
    api.list_items(params)
        .map(|item| item.map(|o| o.row(ar, with_object)))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------
// Watch

/// What the informer's handler tells the printing thread.
type Event = (&'static str, Row);

/// Prints the changes an informer sees after the table, until `until` says stop.
#[allow(clippy::too_many_arguments)]
fn watch<K>(
    informer: SharedIndexInformer<K>,
    factory: &SharedInformerFactory,
    printer: &mut Printer,
    listed: &[Row],
    with_object: bool,
    until: Option<WatchFor>,
    stop: &crossbeam_channel::Receiver<()>,
    demo: Option<&Demo>,
    target: &DemoTarget,
) -> Result<(), String>
where
    K: Object + Listed,
{
    let ar = printer.resource.clone();
    let seen: Arc<HashMap<String, String>> = Arc::new(
        listed
            .iter()
            .map(|r| (r.key(), r.resource_version.clone()))
            .collect(),
    );
    let (tx, rx) = crossbeam_channel::unbounded::<Event>();
    let (tx_add, tx_upd, tx_del) = (tx.clone(), tx.clone(), tx);
    let (ar_add, ar_upd, ar_del) = (ar.clone(), ar.clone(), ar.clone());
    let seen_add = Arc::clone(&seen);
    let handler = informer
        .handler_fns()
        .on_add(move |obj, initial| {
            let row = obj.row(&ar_add, with_object);
            let event = match seen_add.get(&row.key()) {
                // In the table already, unchanged: not an event.
                Some(rv) if initial && *rv == row.resource_version => return,
                Some(_) if initial => "MODIFIED",
                _ => "ADDED",
            };
            let _ = tx_add.send((event, row));
        })
        .on_update(move |old, new| {
            let row = new.row(&ar_upd, with_object);
            if old.row(&ar_upd, false).resource_version != row.resource_version {
                let _ = tx_upd.send(("MODIFIED", row));
            }
        })
        .on_delete(move |gone| {
            let _ = tx_del.send(("DELETED", gone.object().row(&ar_del, with_object)));
        });
    informer
        .add_event_handler(handler)
        .map_err(|e| e.to_string())?;
    factory.start().map_err(|e| e.to_string())?;
    let report = factory.wait_for_cache_sync(SYNC_TIMEOUT);
    if !report.all_synced() {
        return Err(format!("the watch did not start: {report}"));
    }
    let mut printed = 0u64;
    let mut done = |event: &str, row: &Row| {
        printer.print_event(event, row);
        printed += 1;
        matches!(until, Some(WatchFor::Events(n)) if printed >= n)
    };
    // Gone between the table's list and the informer's: said here, once (the informer may
    // also have seen it go, right after its list).
    let cached: HashSet<String> = informer
        .lister()
        .list_all()
        .iter()
        .map(|o| o.row(&ar, false).key())
        .collect();
    let mut gone = HashSet::new();
    for row in listed.iter().filter(|r| !cached.contains(&r.key())) {
        gone.insert(row.key());
        if done("DELETED", row) {
            return Ok(());
        }
    }
    let _script = demo.map(|d| d.script(&ar, target));
    let deadline = match until {
        Some(WatchFor::Time(d)) => Some(Instant::now() + d),
        _ => None,
    };
    let never = crossbeam_channel::never();
    loop {
        let timeout = match deadline {
            Some(d) => crossbeam_channel::at(d),
            None => never.clone(),
        };
        crossbeam_channel::select! {
            recv(rx) -> event => match event {
                Ok((event, row)) => {
                    let said = match event {
                        "DELETED" => gone.remove(&row.key()),
                        _ => { gone.remove(&row.key()); false }
                    };
                    if !said && done(event, &row) {
                        return Ok(());
                    }
                }
                Err(_) => return Ok(()),
            },
            recv(stop) -> _ => return Ok(()),
            recv(timeout) -> _ => return Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// main

/// `kubectl get ...`: exits 1 (after one `get: error: ...` line) on failure.
pub fn main(argv: impl Iterator<Item = String>) {
    let args = match parse_args(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("get: error: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("get: error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let options = crate::kubeconfig_options(&args.kubeconfig, &args.context, &args.namespace);
    let loaded = if args.demo {
        None
    } else {
        Config::infer_if_configured(&options).map_err(|e| e.to_string())?
    };
    // The demo's discovery cache, unless `--cache-dir`: removed when the program ends.
    let mut temp_cache = None;
    let (client, demo) = match loaded {
        Some(config) => {
            if args.verbose {
                eprintln!("get: reading {}", config.source);
            }
            (config.client().map_err(|e| e.to_string())?, None)
        }
        None => {
            let why = if args.demo {
                "--demo given"
            } else {
                "no cluster configured"
            };
            eprintln!("get: {why}; running against the embedded test API server (demo)");
            let demo = Demo::start();
            let client = Client::new(demo.server.client_config()).map_err(|e| e.to_string())?;
            if args.cache_dir.is_none() {
                temp_cache = Some(tempfile::tempdir().map_err(|e| e.to_string())?);
            }
            (client, Some(demo))
        }
    };
    let cache_root = match (&args.cache_dir, &temp_cache) {
        (Some(dir), _) => Some(dir.join("discovery")),
        (None, Some(temp)) => Some(temp.path().join("discovery")),
        (None, None) => DiskCache::kubectl_root(),
    };

    // Discovery: what the user typed -> where the resource lives.
    let mapper = mapper(&client, cache_root, args.verbose);
    let found = resolve(&mapper, &args.resource, args.verbose)?;
    let verb = if args.name.is_some() { "get" } else { "list" };
    if !found.supports(verb) || (args.watch && !found.supports("watch")) {
        return Err(format!(
            "the server does not allow {verb}{} on {}",
            if args.watch { " and watch" } else { "" },
            plural_group(&found)
        ));
    }
    let ar = found.api_resource();
    let namespace = match (ar.namespaced, args.all_namespaces) {
        (true, false) => Some(
            args.namespace
                .clone()
                .unwrap_or_else(|| client.default_namespace().to_owned()),
        ),
        _ => None,
    };
    let where_ = match &namespace {
        Some(ns) => format!(" in {ns} namespace"),
        None => String::new(),
    };
    let with_object = matches!(args.output, Output::Json | Output::Yaml);
    let params = ListParams {
        label_selector: args.selector.clone(),
        ..Default::default()
    };
    let name = args.name.as_deref();

    // List (or get): the RESTClient for one object as JSON/YAML, else typed, dynamic or
    // metadata only.
    let mut printer = Printer::new(&ar, args);
    let rows = match name {
        Some(name) if with_object => {
            let object = get_raw(&client, &ar, namespace.as_deref(), name, args.metadata_only)?;
            if args.verbose {
                eprintln!("get: got {} through the RESTClient", plural_group(&found));
            }
            let mut row = Row {
                namespace: namespace.clone().unwrap_or_default(),
                name: name.to_owned(),
                resource_version: object["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                created: None,
                cells: Vec::new(),
                object: None,
            };
            print_document(&object, args.output);
            row.object = Some(object);
            vec![row]
        }
        _ => {
            let ns = namespace.as_deref();
            let (rows, via) = if args.metadata_only {
                let api = api_for::<PartialObjectMetadata>(&client, &ar, ns);
                let rows = list_rows(&api, &ar, name, &params, with_object)?;
                (rows, "Api<PartialObjectMetadata>")
            } else {
                match typed_list(&client, &ar, ns, name, &params, with_object) {
                    Some(rows) => (rows?, "the typed client (k8s-openapi)"),
                    None => {
                        let api = api_for::<DynamicObject>(&client, &ar, ns);
                        let rows = list_rows(&api, &ar, name, &params, with_object)?;
                        (rows, "Api<DynamicObject>")
                    }
                }
            };
            if args.verbose {
                eprintln!(
                    "get: {} {} through {via}",
                    if name.is_some() { "got" } else { "listed" },
                    plural_group(&found)
                );
            }
            let where_ = if name.is_some() { "" } else { where_.as_str() };
            printer.print_list(&rows, where_, name.is_some());
            rows
        }
    };
    if !args.watch {
        return Ok(());
    }

    // Watch: an informer from the factory, dynamic or metadata only.
    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(1);
    ctrlc::set_handler(move || {
        let _ = stop_tx.try_send(());
    })
    .map_err(|e| format!("installing the Ctrl-C handler: {e}"))?;
    let mut options = FactoryOptions::new().strip_managed_fields(true);
    if let Some(ns) = &namespace {
        options = options.namespace(ns);
    }
    if let Some(selector) = &args.selector {
        options = options.labels(selector);
    }
    if let Some(name) = name {
        options = options.fields(&format!("metadata.name={name}"));
    }
    let factory = SharedInformerFactory::with_options(client.clone(), options);
    let target = DemoTarget {
        namespace: namespace.unwrap_or_else(|| "lab".into()),
        name: args.name.clone(),
        labels: args
            .selector
            .as_deref()
            .map(selector_labels)
            .unwrap_or_default(),
    };
    let result = if args.metadata_only {
        let informer = factory.metadata_informer(&ar);
        watch(
            informer,
            &factory,
            &mut printer,
            &rows,
            with_object,
            args.watch_for,
            &stop_rx,
            demo.as_ref(),
            &target,
        )
    } else {
        let informer = factory.dynamic_informer(&ar);
        watch(
            informer,
            &factory,
            &mut printer,
            &rows,
            with_object,
            args.watch_for,
            &stop_rx,
            demo.as_ref(),
            &target,
        )
    };
    factory.shutdown();
    result
}

/// `deployments.apps`, `pods`.
fn plural_group(r: &ServerResource) -> String {
    if r.group.is_empty() {
        r.plural.clone()
    } else {
        format!("{}.{}", r.plural, r.group)
    }
}

/// Without the `k8s-openapi` feature: no typed clients, everything goes through the dynamic
/// client.
#[cfg(not(feature = "k8s-openapi"))]
fn typed_list(
    _client: &Client,
    _ar: &ApiResource,
    _namespace: Option<&str>,
    _name: Option<&str>,
    _params: &ListParams,
    _with_object: bool,
) -> Option<Result<Vec<Row>, String>> {
    None
}

/// The typed clients (kind 4 of 4), with the `k8s-openapi` feature: k8s-openapi's `Pod`,
/// `ConfigMap`, `Namespace`, `Node` and `Deployment` through `Api<Pod>` and friends (their
/// place in the API is the type's own; discovery only recognised the kind). `None` for other
/// kinds and versions: they go through the dynamic client. Rows are printed from the
/// objects' JSON, as the dynamic client's are.
#[cfg(feature = "k8s-openapi")]
fn typed_list(
    client: &Client,
    ar: &ApiResource,
    namespace: Option<&str>,
    name: Option<&str>,
    params: &ListParams,
    with_object: bool,
) -> Option<Result<Vec<Row>, String>> {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
    use kube_informer::api::Resource;

    fn typed<K: Resource + serde::Serialize>(
        client: &Client,
        ar: &ApiResource,
        namespace: Option<&str>,
        name: Option<&str>,
        params: &ListParams,
        with_object: bool,
    ) -> Result<Vec<Row>, String> {
        let api: Api<K> = match namespace {
            Some(ns) if K::NAMESPACED => Api::namespaced(client.clone(), ns),
            _ => Api::all(client.clone()),
        };
        let objects: Vec<K> = match name {
            Some(name) => vec![api.get(name).map_err(|e| e.to_string())?],
            None => api
                .list_items(params)
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?,
        };
        objects
            .iter()
            .map(|o| {
                let mut object = serde_json::to_value(o).map_err(|e| e.to_string())?;
                let meta = &object["metadata"];
                let text = |field: &str| meta[field].as_str().unwrap_or("").to_owned();
                let deleting = !meta["deletionTimestamp"].is_null();
                let mut row = Row {
                    namespace: text("namespace"),
                    name: text("name"),
                    resource_version: text("resourceVersion"),
                    created: meta["creationTimestamp"].as_str().map(str::to_owned),
                    cells: kind_cells(ar, |f| object[f].clone(), deleting),
                    object: None,
                };
                if with_object {
                    if let Some(meta) = object["metadata"].as_object_mut() {
                        meta.remove("managedFields");
                    }
                    row.object = Some(object);
                }
                Ok(row)
            })
            .collect()
    }

    let list = match (ar.group.as_str(), ar.version.as_str(), ar.kind.as_str()) {
        ("", "v1", "Pod") => typed::<Pod>,
        ("", "v1", "ConfigMap") => typed::<ConfigMap>,
        ("", "v1", "Namespace") => typed::<Namespace>,
        ("", "v1", "Node") => typed::<Node>,
        ("apps", "v1", "Deployment") => typed::<Deployment>,
        _ => return None,
    };
    Some(list(client, ar, namespace, name, params, with_object))
}

/// Labels that satisfy a selector's equality requirements (for the demo's scripted object,
/// so that it is selected).
fn selector_labels(selector: &str) -> Vec<(String, String)> {
    let Ok(sel) = LabelSelector::parse(selector) else {
        return Vec::new();
    };
    sel.requirements()
        .iter()
        .filter_map(|r| match r {
            Requirement::Equals(k, v) => Some((k.clone(), v.clone())),
            Requirement::In(k, vs) => vs.first().map(|v| (k.clone(), v.clone())),
            Requirement::Exists(k) => Some((k.clone(), "yes".into())),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Demo mode

/// The embedded API server, seeded.
struct Demo {
    server: Arc<ApiServer>,
}

/// Where the demo's scripted change happens during a watch.
struct DemoTarget {
    namespace: String,
    name: Option<String>,
    labels: Vec<(String, String)>,
}

/// A custom resource with a short name, as a CRD would register it.
fn widgets() -> ApiResource {
    ApiResource::new("lab.example.com", "v1", "Widget", "widgets", true)
}

fn core(kind: &str, plural: &str, namespaced: bool) -> ApiResource {
    ApiResource::new("", "v1", kind, plural, namespaced)
}

fn demo_pod(
    ns: &str,
    name: &str,
    containers: usize,
    ready: usize,
    phase: &str,
    restarts: u32,
) -> Value {
    let specs: Vec<Value> = (0..containers)
        .map(|i| json!({"name": format!("c{i}"), "image": "nginx:1.27"}))
        .collect();
    let statuses: Vec<Value> = (0..containers)
        .map(|i| {
            json!({"name": format!("c{i}"), "image": "nginx:1.27", "imageID": "",
                   "ready": i < ready, "restartCount": restarts,
                   "state": if phase == "Running" { json!({"running": {}}) }
                            else { json!({"waiting": {"reason": "ContainerCreating"}}) }})
        })
        .collect();
    json!({
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name.split('-').next()}},
        "spec": {"containers": specs},
        "status": {"phase": phase, "containerStatuses": statuses}
    })
}

impl Demo {
    fn start() -> Demo {
        let server = ApiServer::builder()
            .short_names(&widgets(), &["wdg"])
            .start();
        let seed = |ar: &ApiResource, object: Value| {
            if let Err(e) = server.create(ar, object) {
                eprintln!("get: demo: seeding a {}: {}", ar.kind, e.message);
            }
        };
        let namespaces = core("Namespace", "namespaces", false);
        for ns in ["default", "kube-system", "lab", "shop"] {
            seed(
                &namespaces,
                json!({"metadata": {"name": ns}, "status": {"phase": "Active"}}),
            );
        }
        let nodes = core("Node", "nodes", false);
        for (node, ready) in [("node-a", "True"), ("node-b", "True"), ("node-c", "False")] {
            seed(
                &nodes,
                json!({"metadata": {"name": node, "labels": {"kubernetes.io/os": "linux"}},
                       "status": {"conditions": [{"type": "Ready", "status": ready}]}}),
            );
        }
        let pods = core("Pod", "pods", true);
        seed(&pods, demo_pod("default", "web-0", 1, 1, "Running", 0));
        seed(&pods, demo_pod("lab", "web-1", 1, 1, "Running", 2));
        seed(&pods, demo_pod("lab", "web-2", 1, 0, "Pending", 0));
        seed(&pods, demo_pod("shop", "cart-0", 2, 2, "Running", 0));
        let deployments = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
        for (ns, name, replicas, ready) in [
            ("default", "web", 1, 1),
            ("lab", "web", 2, 1),
            ("shop", "cart", 1, 1),
        ] {
            seed(
                &deployments,
                json!({"metadata": {"name": name, "namespace": ns},
                       "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                "template": {"metadata": {"labels": {"app": name}},
                                             "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}},
                       "status": {"replicas": replicas, "readyReplicas": ready,
                                  "updatedReplicas": replicas, "availableReplicas": ready}}),
            );
        }
        let config_maps = core("ConfigMap", "configmaps", true);
        seed(
            &config_maps,
            json!({"metadata": {"name": "settings", "namespace": "default"},
                   "data": {"mode": "demo", "level": "info"}}),
        );
        seed(
            &config_maps,
            json!({"metadata": {"name": "kube-root-ca.crt", "namespace": "lab"},
                   "data": {"ca.crt": "-----BEGIN CERTIFICATE-----"}}),
        );
        for (ns, name, size) in [("default", "gizmo", 3), ("lab", "sprocket", 5)] {
            seed(
                &widgets(),
                json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
                       "metadata": {"name": name, "namespace": ns}, "spec": {"size": size}}),
            );
        }
        Demo {
            server: Arc::new(server),
        }
    }

    /// Starts the scripted change; stopped and joined when the handle is dropped.
    fn script(&self, ar: &ApiResource, target: &DemoTarget) -> ScriptHandle {
        let stop = Arc::new(StopSignal::new());
        let (server, s, ar) = (Arc::clone(&self.server), Arc::clone(&stop), ar.clone());
        let ns = ar.namespaced.then(|| target.namespace.clone());
        let name = target.name.clone();
        let labels: serde_json::Map<String, Value> = target
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        let thread = std::thread::Builder::new()
            .name("get/demo-script".into())
            .spawn(move || {
                let pause = Duration::from_millis(300);
                let relabel = |name: &str, value: &str| {
                    let patch = json!({"metadata": {"labels": {"example.com/demo": value}}});
                    let _ = server.patch(&ar, ns.as_deref(), name, &patch);
                };
                if let Some(name) = name {
                    // Watching one object: relabel it.
                    if !s.sleep(pause) {
                        relabel(&name, "changed");
                    }
                    return;
                }
                let name = "demo-watch";
                let mut object = json!({"metadata": {"name": name, "labels": labels}});
                if let Some(ns) = &ns {
                    object["metadata"]["namespace"] = ns.as_str().into();
                }
                if ar.group.is_empty() && ar.kind == "Pod" {
                    object = demo_pod(ns.as_deref().unwrap_or("default"), name, 1, 0, "Pending", 0);
                    object["metadata"]["labels"] = Value::Object(labels);
                }
                if s.sleep(pause) || server.create(&ar, object).is_err() || s.sleep(pause) {
                    return;
                }
                if ar.group.is_empty() && ar.kind == "Pod" {
                    let running = json!({"status": {"phase": "Running", "containerStatuses": [
                        {"name": "c0", "image": "nginx:1.27", "imageID": "", "ready": true,
                         "restartCount": 0, "state": {"running": {}}}]}});
                    let _ = server.patch(&ar, ns.as_deref(), name, &running);
                } else {
                    relabel(name, "changed");
                }
                if !s.sleep(pause) {
                    let _ = server.delete(&ar, ns.as_deref(), name);
                }
            })
            .ok();
        ScriptHandle(stop, thread)
    }
}

/// Stops and joins the demo's scripted change when dropped.
struct ScriptHandle(Arc<StopSignal>, Option<std::thread::JoinHandle<()>>);

impl Drop for ScriptHandle {
    fn drop(&mut self) {
        self.0.stop();
        if let Some(t) = self.1.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Args, String> {
        parse_args(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn flags_parse_like_kubectl() {
        let a = args("po web-1 -n lab -o yaml --metadata-only -w").unwrap();
        assert_eq!(
            (
                a.resource.as_str(),
                a.name.as_deref(),
                a.namespace.as_deref()
            ),
            ("po", Some("web-1"), Some("lab"))
        );
        assert_eq!(a.output, Output::Yaml);
        assert!(a.metadata_only && a.watch && a.watch_for.is_none());
        let a = args("deploy -A --selector=app=web --watch-for 3").unwrap();
        assert!(a.all_namespaces && a.watch);
        assert_eq!(a.selector.as_deref(), Some("app=web"));
        assert_eq!(a.watch_for, Some(WatchFor::Events(3)));
        let a = args("wdg --watch-for=10s --cache-dir /c").unwrap();
        assert_eq!(a.watch_for, Some(WatchFor::Time(Duration::from_secs(10))));
        assert_eq!(a.cache_dir, Some(PathBuf::from("/c")));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for (line, says) in [
            ("", "which resource"),
            ("po -o wide", "--output \"wide\""),
            ("po --bogus", "unknown flag \"--bogus\""),
            ("po -n", "--namespace needs a value"),
            ("po a b", "one NAME at most"),
            ("po a/b", "not an object name"),
            ("po web -A", "across all namespaces"),
            ("po -l a=(", "--selector \"a=(\""),
            ("po --watch-for x", "--watch-for \"x\""),
            ("po --watch-for 3m", "--watch-for \"3m\""),
            ("po --watch-for 0", "--watch-for \"0\""),
        ] {
            let err = args(line).err().unwrap_or_default();
            assert!(err.contains(says), "{line:?}: {err:?}");
        }
    }

    #[test]
    fn ages_read_like_kubectl() {
        let now = parse_rfc3339("2026-11-23T12:00:00Z").unwrap();
        for (created, shown) in [
            ("2026-11-23T11:59:15Z", "45s"),
            ("2026-11-23T11:56:48Z", "3m12s"),
            ("2026-11-23T11:35:00Z", "25m"),
            ("2026-11-23T06:57:00Z", "5h3m"),
            ("2026-11-22T16:00:00Z", "20h"),
            ("2026-11-20T08:00:00Z", "3d4h"),
            ("2026-07-26T12:00:00Z", "120d"),
            ("2023-10-15T12:00:00Z", "3y40d"),
            ("2026-11-23T12:00:05Z", "0s"),
        ] {
            assert_eq!(age(Some(created), now), shown, "{created}");
        }
        assert_eq!(age(Some("yesterday"), now), "<unknown>");
        assert_eq!(age(None, now), "<unknown>");
    }

    #[test]
    fn pod_columns_come_from_spec_and_status() {
        let pod = demo_pod("lab", "web-2", 2, 1, "Pending", 3);
        let cells = pod_cells(&pod["spec"], &pod["status"], false);
        assert_eq!(cells, ["1/2", "ContainerCreating", "6"]);
        let cells = pod_cells(&pod["spec"], &pod["status"], true);
        assert_eq!(cells[1], "Terminating");
        assert_eq!(
            pod_cells(&Value::Null, &Value::Null, false),
            ["0/0", "Unknown", "0"]
        );
    }

    #[test]
    fn the_demo_object_matches_the_selector() {
        assert_eq!(
            selector_labels("app=web,tier in (front,back),!old,x"),
            [
                ("app".to_owned(), "web".to_owned()),
                ("tier".to_owned(), "front".to_owned()),
                ("x".to_owned(), "yes".to_owned())
            ]
        );
    }
}
