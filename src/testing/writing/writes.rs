//! The HTTP writes of the test API server: create, update, patch, delete and
//! deletecollection, with their options (`dryRun`, `fieldValidation`, `fieldManager`,
//! `DeleteOptions`), and the `status` and `scale` subresources.
//!
//! The store decides what changes; this file reads the request and shapes the answer the way
//! the captures show it (201 for a create, a `Status` of `Success` for a delete that removed
//! the object, one `Warning` header per unknown field, ...).

use serde_json::Value;

use super::http::Request;
use super::managed_fields;
use super::patch;
use super::scale;
use super::store::{
    not_found, DeleteOptions, Deleted, FieldValidation, Filter, Store, TypeKey, WriteOptions,
    Written,
};
use super::webhooks::AdmissionHost;
use crate::api::{Status, StatusCause, StatusDetails};

/// Where a write points (the handlers' route, without its helpers).
pub(crate) struct Address<'a> {
    pub tk: &'a TypeKey,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    pub subresource: Option<&'a str>,
}

/// A successful answer: status code, body, and the `Warning` header values.
pub(crate) struct Answer {
    pub code: u16,
    pub body: String,
    pub warnings: Vec<String>,
}

impl Answer {
    /// The admission webhooks' warnings first, then the write's own.
    fn warned(mut self, mut warnings: Vec<String>) -> Answer {
        warnings.append(&mut self.warnings);
        self.warnings = warnings;
        self
    }

    fn object(store: &mut Store, tk: &TypeKey, code: u16, w: Written) -> Answer {
        let body = store.collection(tk).with_type_meta(&w.stored.json);
        Answer {
            code,
            body,
            warnings: w.warnings,
        }
    }
}

/// The 404 of a path the server does not serve (an unknown or disabled subresource).
fn no_such_path() -> Status {
    Status::failure(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

fn bad_request(message: impl Into<String>) -> Status {
    Status::failure(400, "BadRequest", message)
}

/// The write options of a request's query and headers.
fn write_options(req: &Request, subresource: Option<&str>) -> Result<WriteOptions, Status> {
    let field_validation = match req.param("fieldValidation").unwrap_or("") {
        "" | "Warn" => FieldValidation::Warn,
        "Strict" => FieldValidation::Strict,
        "Ignore" => FieldValidation::Ignore,
        other => {
            return Err(bad_request(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
            )))
        }
    };
    let field_manager = req
        .param("fieldManager")
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .or_else(|| {
            req.header("user-agent")
                .map(|ua| ua.split('/').next().unwrap_or(ua).to_owned())
        });
    Ok(WriteOptions {
        dry_run: dry_run(req.param("dryRun"))?,
        field_validation,
        subresource: subresource.map(str::to_owned),
        field_manager,
        managed_fields: None,
        fixture: false,
        duplicate_fields: Vec::new(),
    })
}

fn dry_run(v: Option<&str>) -> Result<bool, Status> {
    match v.unwrap_or("") {
        "" => Ok(false),
        "All" => Ok(true),
        other => Err(bad_request(format!(
            "dryRun: Unsupported value: {other:?}: supported values: \"All\""
        ))),
    }
}

/// `DeleteOptions` from a JSON body (if any), then the query's `gracePeriodSeconds`,
/// `propagationPolicy` and `dryRun`.
fn delete_options(req: &Request) -> Result<DeleteOptions, Status> {
    let mut d = DeleteOptions::default();
    if !req.body.iter().all(u8::is_ascii_whitespace) {
        let v: Value = serde_json::from_slice(&req.body).map_err(|e| {
            bad_request(format!(
                "the body of the request was in an unknown format: {e}"
            ))
        })?;
        d.grace_period = v.get("gracePeriodSeconds").and_then(Value::as_i64);
        d.propagation = v
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_owned);
        d.precondition_uid = v
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_owned);
        d.precondition_rv = v
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        d.orphan_dependents = v.get("orphanDependents").and_then(Value::as_bool);
        d.dry_run = v
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x == "All"));
    }
    if let Some(g) = req.param("gracePeriodSeconds") {
        d.grace_period = Some(
            g.parse()
                .map_err(|_| bad_request(format!("invalid gracePeriodSeconds {g:?}")))?,
        );
    }
    if let Some(p) = req.param("propagationPolicy") {
        d.propagation = Some(p.to_owned());
    }
    if let Some(o) = req.param("orphanDependents") {
        d.orphan_dependents = Some(o == "true");
    }
    if let Some(p) = d.propagation.as_deref() {
        if !matches!(p, "Foreground" | "Background" | "Orphan") {
            let why = format!("Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"");
            let mut st = Status::failure(
                422,
                "Invalid",
                format!("DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: {why}"),
            );
            st.details = Some(StatusDetails {
                group: Some("meta.k8s.io".into()),
                kind: Some("DeleteOptions".into()),
                causes: vec![StatusCause {
                    reason: "FieldValueNotSupported".into(),
                    message: why,
                    field: "propagationPolicy".into(),
                }],
                ..Default::default()
            });
            return Err(st);
        }
    }
    d.dry_run |= dry_run(req.param("dryRun"))?;
    Ok(d)
}

fn json_body(req: &Request) -> Result<Value, Status> {
    serde_json::from_slice(&req.body).map_err(|e| {
        bad_request(format!(
            "the body of the request was in an unknown format: {e}"
        ))
    })
}

/// A custom resource's body in another version of its group: refused with the warnings
/// of its decoding (see `crd_version.rs`).
fn other_version(
    t: &Address<'_>,
    shared: &impl AdmissionHost,
    body: &Value,
    o: &WriteOptions,
) -> Option<Answer> {
    let kind = {
        let mut store = shared.store.lock();
        let c = store.collection(t.tk);
        if c.info.builtin || c.info.schema.is_none() {
            return None;
        }
        c.kind.clone()
    };
    super::crd_version::refused(t.tk, &kind, body, o)
}

/// Answers one write request (POST, PUT, PATCH, DELETE).
pub(crate) fn write(
    req: &Request,
    t: &Address<'_>,
    shared: &impl AdmissionHost,
) -> Result<Answer, Status> {
    let info = shared.store.lock().collection(t.tk).info.clone();
    match t.subresource {
        None => {}
        Some("status") if info.subresources.status && t.name.is_some() => {}
        Some("scale") if info.subresources.scale.is_some() && t.name.is_some() => {
            return scale_write(req, t, shared);
        }
        Some(_) => return Err(no_such_path()),
    }
    let ns = t.namespace;
    match (req.method.as_str(), t.name) {
        ("POST", None) => {
            let mut o = write_options(req, None)?;
            let body = json_body(req)?;
            if let Some(refused) = other_version(t, shared, &body, &o) {
                return Ok(refused);
            }
            o.duplicate_fields = super::duplicate_fields::duplicate_fields(&req.body);
            super::events::validate(t.tk, &body)?;
            let (body, warnings) = if super::webhooks::configured(shared) {
                let (body, warnings, managed) = admit(shared, req, t, "CREATE", body, None, &o)?;
                o.managed_fields = managed;
                (body, warnings)
            } else {
                (body, Vec::new())
            };
            let mut body = body;
            let crd = learn(t.tk, &mut body)?;
            if let Some(d) = &crd {
                super::crd_lifecycle::initial_status(&mut body, d);
            }
            let mut store = shared.store.lock();
            let w = store.create_with(t.tk, ns, body, &o)?;
            let answer = Answer::object(&mut store, t.tk, 201, w);
            if let (Some(d), false) = (crd, o.dry_run) {
                serve_crd(&mut store, t.tk, &d, &answer);
            }
            Ok(answer.warned(warnings))
        }
        ("PUT", Some(n)) => {
            let mut o = write_options(req, t.subresource)?;
            let body = json_body(req)?;
            if let Some(refused) = other_version(t, shared, &body, &o) {
                return Ok(refused);
            }
            o.duplicate_fields = super::duplicate_fields::duplicate_fields(&req.body);
            super::events::validate(t.tk, &body)?;
            let (body, warnings) = if super::webhooks::configured(shared) {
                let old = current(shared, t, n);
                let (body, warnings, managed) = admit(shared, req, t, "UPDATE", body, old, &o)?;
                o.managed_fields = managed;
                (body, warnings)
            } else {
                (body, Vec::new())
            };
            let mut body = body;
            let crd = match t.subresource {
                None => learn(t.tk, &mut body)?,
                Some(_) => None,
            };
            let mut store = shared.store.lock();
            let w = store.update_with(t.tk, ns, n, body, &o)?;
            let answer = Answer::object(&mut store, t.tk, 200, w);
            if let (Some(d), false) = (crd, o.dry_run) {
                serve_crd(&mut store, t.tk, &d, &answer);
            }
            Ok(answer.warned(warnings))
        }
        ("PATCH", Some(n)) => patch_object(req, t, n, shared),
        ("DELETE", Some(n)) if t.subresource.is_none() => delete(req, t, n, shared),
        ("DELETE", None) => delete_collection(req, t, shared),
        ("PUT", None) | ("PATCH", None) => Err(not_found(t.tk, "")),
        (m, _) => Err(Status::failure(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource: {m}"),
        )),
    }
}

/// What a CustomResourceDefinition written through the API declares, once defaulted and
/// checked as kube-apiserver does it (a 422 otherwise); `None` for writes of anything else.
pub(crate) fn learn(
    tk: &TypeKey,
    body: &mut Value,
) -> Result<Option<super::crd::Definition>, Status> {
    if super::crd::is_crd(tk) {
        super::crd_lifecycle::default_spec(body);
        super::crd::admit(body).map(Some)
    } else {
        Ok(None)
    }
}

/// Serves what a CRD written through the API declares, and establishes it (see
/// `crd_lifecycle.rs`). `answer` is the write's answer: the CRD as written.
pub(crate) fn serve_crd(
    store: &mut Store,
    tk: &TypeKey,
    d: &super::crd::Definition,
    answer: &Answer,
) {
    super::crd::serve(store, d);
    let name = serde_json::from_str::<Value>(&answer.body)
        .ok()
        .and_then(|v| Some(v.pointer("/metadata/name")?.as_str()?.to_owned()));
    if let Some(name) = name {
        super::crd_lifecycle::establish(store, tk, &name);
    }
}

/// PATCH of an object or of its status: the patch type from the Content-Type (415 for one
/// the resource does not take), the patched object from [`patch::patched`], then stored
/// like a PUT (a resourceVersion the patch sets is a precondition).
fn patch_object(
    req: &Request,
    t: &Address<'_>,
    name: &str,
    shared: &impl AdmissionHost,
) -> Result<Answer, Status> {
    let builtin = shared.store.lock().collection(t.tk).info.builtin;
    let ty = patch::patch_type(req.header("content-type").unwrap_or(""), builtin)?;
    let mut o = write_options(req, t.subresource)?;
    // Before the lock below (the lookup takes it too).
    let admission = super::webhooks::configured(shared);
    let mut store = shared.store.lock();
    if ty == patch::PatchType::Apply && admission {
        drop(store);
        return admitted_apply(req, t, name, shared, &o);
    }
    if ty == patch::PatchType::Apply {
        let (w, code) = patch::apply_patch(req, &mut store, t.tk, t.namespace, name, &o)?;
        return Ok(Answer::object(&mut store, t.tk, code, w));
    }
    // With webhooks, no lock is held while they are called (one may call this server back):
    // the patch is made again, as kube-apiserver retries it, when the object changed in
    // between (a few times, then the conflict is answered).
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = store.get(t.tk, t.namespace, name)?;
        let doc: Value =
            serde_json::from_str(&store.collection(t.tk).with_type_meta(&current.json))
                .unwrap_or_default();
        let patched = patch::patched(ty, &doc, &req.body)?;
        if matches!(ty, patch::PatchType::Merge | patch::PatchType::Json) {
            strict_patch(&mut store, t.tk, &patched, &o)?;
        }
        super::events::validate(t.tk, &patched)?;
        let (patched, warnings) = if admission {
            drop(store);
            let (patched, warnings, managed) =
                admit(shared, req, t, "UPDATE", patched, Some(doc), &o)?;
            o.managed_fields = managed;
            store = shared.store.lock();
            let now = store.get(t.tk, t.namespace, name)?;
            if now.rv != current.rv && attempt < 5 {
                continue;
            }
            (patched, warnings)
        } else {
            (patched, Vec::new())
        };
        let mut patched = patched;
        let crd = match t.subresource {
            None => learn(t.tk, &mut patched)?,
            Some(_) => None,
        };
        let w = store.update_with(t.tk, t.namespace, name, patched, &o)?;
        let answer = Answer::object(&mut store, t.tk, 200, w);
        if let (Some(d), false) = (crd, o.dry_run) {
            serve_crd(&mut store, t.tk, &d, &answer);
        }
        return Ok(answer.warned(warnings));
    }
}

/// A server-side apply under admission webhooks: the applied object is computed (as a dry
/// run), admitted as a `CREATE` or an `UPDATE` (kube-apiserver's `CreateOptions` or
/// `UpdateOptions` with the `fieldManager`), then stored as the hooks left it with the
/// apply's managed fields (a mutating hook's change is attributed to no manager, as on the
/// real server). The object changed in between: the stored version is the precondition
/// (409).
fn admitted_apply(
    req: &Request,
    t: &Address<'_>,
    name: &str,
    shared: &impl AdmissionHost,
    o: &WriteOptions,
) -> Result<Answer, Status> {
    let mut trial = o.clone();
    trial.dry_run = true;
    let (applied, code) = {
        let mut store = shared.store.lock();
        let (w, code) = patch::apply_patch(req, &mut store, t.tk, t.namespace, name, &trial)?;
        let body = store.collection(t.tk).with_type_meta(&w.stored.json);
        (
            serde_json::from_str::<Value>(&body).unwrap_or_default(),
            code,
        )
    };
    let created = code == 201;
    let old = if created {
        None
    } else {
        current(shared, t, name)
    };
    let operation = if created { "CREATE" } else { "UPDATE" };
    // The apply's own managed fields are kept below: a hook's change is no one's.
    let (mut object, warnings, _) = admit(shared, req, t, operation, applied, old, o)?;
    if created {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            // Given again by the store.
            for key in ["uid", "creationTimestamp", "resourceVersion"] {
                meta.remove(key);
            }
        }
    }
    let crd = match t.subresource {
        None => learn(t.tk, &mut object)?,
        Some(_) => None,
    };
    let mut o = o.clone();
    o.field_manager = None;
    o.managed_fields = Some(
        object
            .pointer("/metadata/managedFields")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
    );
    let mut store = shared.store.lock();
    let w = if created {
        store.create_with(t.tk, t.namespace, object, &o)?
    } else {
        store.update_with(t.tk, t.namespace, name, object, &o)?
    };
    let answer = Answer::object(&mut store, t.tk, code, w);
    if let (Some(d), false) = (crd, o.dry_run) {
        serve_crd(&mut store, t.tk, &d, &answer);
    }
    Ok(answer.warned(warnings))
}

/// `fieldValidation=Strict` on a JSON or merge patch of a custom resource: unknown fields of
/// the patched object are kube-apiserver's 422 on the field `patch`, quoting the patched
/// object (a create or update answers 400 instead; see `Store::check_fields`). Built-ins keep
/// the 400: the capture covers custom resources only, and a quoted Secret would carry its
/// data into the message.
fn strict_patch(
    store: &mut Store,
    tk: &TypeKey,
    patched: &Value,
    o: &WriteOptions,
) -> Result<(), Status> {
    let Some(m) = patched.as_object() else {
        return Ok(());
    };
    if o.field_validation != FieldValidation::Strict || store.collection(tk).info.builtin {
        return Ok(());
    }
    let unknown = store
        .collection(tk)
        .info
        .unknown_fields(&mut m.clone(), false);
    if unknown.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    let e = super::validation::FieldError::invalid(
        "patch",
        &Value::from(patched.to_string()),
        &format!("strict decoding error: {}", listed.join(", ")),
    );
    Err(super::validation::invalid("", "", "", "", &[e]))
}

/// The stored object at `t` named `name`, with its `kind` and `apiVersion` (`None` if
/// there is none).
fn current(shared: &impl AdmissionHost, t: &Address<'_>, name: &str) -> Option<Value> {
    let mut store = shared.store.lock();
    let o = store.get(t.tk, t.namespace, name).ok()?;
    serde_json::from_str(&store.collection(t.tk).with_type_meta(&o.json)).ok()
}

/// The admission webhooks on a write (see `webhooks.rs`): the object to write, as the
/// mutating webhooks left it, their warnings, and, when a mutating webhook changed the
/// object, the managed fields the write computes for the object as it was before (the real
/// server computes them before admission: a webhook's change is no manager's). Called with
/// no lock held.
fn admit(
    shared: &impl AdmissionHost,
    req: &Request,
    t: &Address<'_>,
    operation: &'static str,
    mut object: Value,
    old: Option<Value>,
    o: &WriteOptions,
) -> Result<(Value, Vec<String>, Option<Value>), Status> {
    let dry_run = o.dry_run;
    // The object as kube-apiserver hands it to admission: its kind, version and namespace,
    // and a custom resource's defaults (decoding filled them in; see `crd_defaults.rs`).
    if let Some(m) = object.as_object_mut() {
        let (kind, api_version, schema) = {
            let mut store = shared.store.lock();
            let c = store.collection(t.tk);
            (c.kind.clone(), c.api_version.clone(), c.info.schema.clone())
        };
        if let Some(schema) = &schema {
            super::crd_defaults::apply(schema, m);
        }
        m.entry("kind").or_insert_with(|| kind.into());
        m.entry("apiVersion").or_insert_with(|| api_version.into());
        if let (Some(ns), Some(meta)) = (
            t.namespace,
            m.entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()))
                .as_object_mut(),
        ) {
            meta.entry("namespace").or_insert_with(|| ns.into());
        }
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .or(t.name)
        .unwrap_or("")
        .to_owned();
    let attrs = super::webhooks::Attributes {
        tk: t.tk,
        namespace: t.namespace,
        name: &name,
        subresource: t.subresource,
        operation,
        dry_run,
        options: super::webhooks::options(
            operation,
            dry_run,
            req.param("fieldManager"),
            req.param("fieldValidation"),
            None,
        ),
        user: super::webhooks::user_info(shared, req),
    };
    let before = object.clone();
    let admitted = super::webhooks::admit(shared, &attrs, Some(object), old.as_ref())?;
    let after = admitted.object.unwrap_or_default();
    let managed = if after != before {
        attribution(shared, t, operation, before, o)
    } else {
        None
    };
    Ok((after, admitted.warnings, managed))
}

/// The managed fields a write of `object` would record (a dry run of it); `None` when that
/// write would fail (then the admitted object's are recorded).
fn attribution(
    shared: &impl AdmissionHost,
    t: &Address<'_>,
    operation: &str,
    object: Value,
    o: &WriteOptions,
) -> Option<Value> {
    let mut trial = o.clone();
    trial.dry_run = true;
    trial.managed_fields = None;
    let mut store = shared.store.lock();
    let w = if operation == "CREATE" {
        store.create_with(t.tk, t.namespace, object, &trial)
    } else {
        store.update_with(t.tk, t.namespace, t.name?, object, &trial)
    }
    .ok()?;
    let stored: Value = serde_json::from_str(&w.stored.json).ok()?;
    Some(
        stored
            .pointer("/metadata/managedFields")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
    )
}

/// PUT or PATCH of `/scale` (GET is [`scale_get`]): the Scale's replicas written into the
/// object, with the Scale's managed fields (see `scale.rs`); apply included.
fn scale_write(
    req: &Request,
    t: &Address<'_>,
    shared: &impl AdmissionHost,
) -> Result<Answer, Status> {
    let name = t.name.unwrap_or("");
    let mut o = write_options(req, Some("scale"))?;
    let mut store = shared.store.lock();
    let (paths, builtin) = {
        let info = &store.collection(t.tk).info;
        let Some(paths) = info.subresources.scale.clone() else {
            return Err(no_such_path());
        };
        (paths, info.builtin)
    };
    let current = store.get(t.tk, t.namespace, name)?;
    let mut obj: Value = serde_json::from_str(&current.json).unwrap_or_default();
    let view = scale::scale_view(&paths, &obj);
    let old = view.pointer("/spec/replicas").and_then(Value::as_i64);
    let parent = managed_fields::entries_of(&obj);
    let mut owners = scale::to_subresource(&paths, &parent);
    let apply = req.method == "PATCH"
        && patch::patch_type(req.header("content-type").unwrap_or(""), true)?
            == patch::PatchType::Apply;
    let manager = if apply {
        match req.param("fieldManager").filter(|m| !m.is_empty()) {
            Some(m) => m.to_owned(),
            None => return Err(super::apply::field_manager_required()),
        }
    } else {
        o.field_manager.clone().unwrap_or_default()
    };
    let w = super::store::writer(t.tk, builtin, &o, &manager);
    let wanted = match req.method.as_str() {
        "PUT" => json_body(req)?,
        "PATCH" if apply => serde_yaml::from_slice(&req.body)
            .map_err(|e| Status::failure(400, "BadRequest", format!("error decoding YAML: {e}")))?,
        "PATCH" => {
            let ty = patch::patch_type(req.header("content-type").unwrap_or(""), true)?;
            patch::patched(ty, &view, &req.body)?
        }
        m => {
            return Err(Status::failure(
                405,
                "MethodNotAllowed",
                format!("the server does not allow this method on the requested resource: {m}"),
            ))
        }
    };
    if let Some(rv) = wanted
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
    {
        if rv != current.rv.to_string() {
            return Err(super::store::conflict(t.tk, name));
        }
    }
    let replicas = if apply {
        if let Some(n) = wanted.pointer("/spec/replicas").and_then(Value::as_i64) {
            scale::check_replicas(name, n)?;
        }
        scale::apply(&mut owners, old, &wanted, req.flag("force"), &w)?.unwrap_or(0)
    } else {
        let n = wanted
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        scale::check_replicas(name, n)?;
        scale::record_update(&mut owners, old, Some(n).filter(|n| *n != 0), &w);
        n
    };
    scale::set_replicas(&paths, &mut obj, replicas);
    let entries = scale::to_parent(&paths, &parent, &owners, &t.tk.api_version());
    managed_fields::store_entries(&mut obj, entries);
    o.field_manager = None;
    o.managed_fields = Some(
        obj.pointer("/metadata/managedFields")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
    );
    let w = store.update_with(t.tk, t.namespace, name, obj, &o)?;
    let stored: Value = serde_json::from_str(&w.stored.json).unwrap_or_default();
    Ok(Answer {
        code: 200,
        body: scale::scale_view(&paths, &stored).to_string(),
        warnings: w.warnings,
    })
}

/// The `Scale` of an object, for GET `/scale`.
pub(crate) fn scale_get(t: &Address<'_>, shared: &impl AdmissionHost) -> Result<String, Status> {
    let mut store = shared.store.lock();
    let Some(paths) = store.collection(t.tk).info.subresources.scale.clone() else {
        return Err(no_such_path());
    };
    let current = store.get(t.tk, t.namespace, t.name.unwrap_or(""))?;
    let obj: Value = serde_json::from_str(&current.json).unwrap_or_default();
    Ok(scale::scale_view(&paths, &obj).to_string())
}

/// DELETE of one object: the object when it stays (finalizers, a pod's grace) or when a pod
/// is gone (the pod as deleted); otherwise a `Status` of `Success` naming it.
fn delete(
    req: &Request,
    t: &Address<'_>,
    name: &str,
    shared: &impl AdmissionHost,
) -> Result<Answer, Status> {
    let d = delete_options(req)?;
    let mut warnings = Vec::new();
    let old = if super::webhooks::configured(shared) {
        current(shared, t, name)
    } else {
        None
    };
    if let Some(old) = old {
        let attrs = super::webhooks::Attributes {
            tk: t.tk,
            namespace: t.namespace,
            name,
            subresource: None,
            operation: "DELETE",
            dry_run: d.dry_run,
            options: super::webhooks::options("DELETE", d.dry_run, None, None, Some(&d)),
            user: super::webhooks::user_info(shared, req),
        };
        warnings = super::webhooks::admit(shared, &attrs, None, Some(&old))?.warnings;
    }
    let mut store = shared.store.lock();
    let deleted = if super::crd::is_crd(t.tk) {
        super::crd_lifecycle::delete(&mut store, t.tk, name, &d)?
    } else {
        store.delete_with(t.tk, t.namespace, name, &d)?
    };
    let is_pod = t.tk.group.is_empty() && t.tk.plural == "pods";
    // An object that stays answers 202 when the (deprecated) orphanDependents=false asked
    // for its dependents to go: the real handler's rule, kept for old clients.
    let code = match deleted {
        Deleted::Pending(_) if d.orphan_dependents == Some(false) => 202,
        _ => 200,
    };
    let body = match deleted {
        Deleted::Pending(s) => store.collection(t.tk).with_type_meta(&s.json),
        Deleted::Gone(s) if is_pod => store.collection(t.tk).with_type_meta(&s.json),
        Deleted::Gone(s) => {
            let uid = serde_json::from_str::<Value>(&s.json).ok().and_then(|v| {
                v.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            let details = StatusDetails {
                name: Some(name.to_owned()),
                group: Some(t.tk.group.clone()).filter(|g| !g.is_empty()),
                kind: Some(t.tk.plural.clone()),
                uid,
                ..Default::default()
            };
            format!(
                "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Success\",\"details\":{}}}",
                serde_json::to_string(&details).unwrap_or_else(|_| "{}".into())
            )
        }
    };
    Ok(Answer {
        code,
        body,
        warnings,
    })
}

/// DELETE of a collection: the deleted objects as they were, as a `<Kind>List` at the
/// version after the deletions (custom resources: with `kind`/`apiVersion` on each item and
/// `metadata.continue: ""`).
fn delete_collection(
    req: &Request,
    t: &Address<'_>,
    shared: &impl AdmissionHost,
) -> Result<Answer, Status> {
    let filter = Filter::parse(req.param("labelSelector"), req.param("fieldSelector"))?;
    let d = delete_options(req)?;
    let mut warnings = Vec::new();
    let (items, rv) = if super::webhooks::configured(shared) {
        admitted_deletes(req, t, shared, &filter, &d, &mut warnings)?
    } else {
        shared
            .store
            .lock()
            .delete_collection(t.tk, t.namespace, &filter, &d)?
    };
    let mut store = shared.store.lock();
    let c = store.collection(t.tk);
    let custom = !c.info.builtin;
    let items: Vec<String> = items
        .iter()
        .map(|o| {
            if custom {
                c.with_type_meta(&o.json)
            } else {
                o.json.to_string()
            }
        })
        .collect();
    let meta = if custom {
        format!("{{\"continue\":\"\",\"resourceVersion\":\"{rv}\"}}")
    } else {
        format!("{{\"resourceVersion\":\"{rv}\"}}")
    };
    let body = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{meta},\"items\":[{}]}}",
        Value::from(format!("{}List", c.kind)),
        Value::from(c.api_version.as_str()),
        items.join(","),
    );
    Ok(Answer {
        code: 200,
        body,
        warnings,
    })
}

/// A collection's delete under admission webhooks, as kube-apiserver does it: each chosen
/// object is admitted on its own (a `DELETE` review with the object as `oldObject` and no
/// `name`), then deleted; a denial stops there (what was deleted stays deleted). No lock is
/// held while a webhook is called; an object deleted meanwhile is skipped.
fn admitted_deletes(
    req: &Request,
    t: &Address<'_>,
    shared: &impl AdmissionHost,
    filter: &Filter,
    d: &DeleteOptions,
    warnings: &mut Vec<String>,
) -> Result<(Vec<super::store::Stored>, u64), Status> {
    let prefix = t.namespace.map(|n| format!("{n}/"));
    let chosen: Vec<(super::store::Stored, Value)> = {
        let mut store = shared.store.lock();
        let c = store.collection(t.tk);
        c.objects
            .iter()
            .filter(|(k, o)| {
                prefix.as_deref().is_none_or(|p| k.starts_with(p)) && filter.matches(o)
            })
            .map(|(_, o)| {
                let old = serde_json::from_str(&c.with_type_meta(&o.json)).unwrap_or_default();
                (std::sync::Arc::clone(o), old)
            })
            .collect()
    };
    let user = super::webhooks::user_info(shared, req);
    let mut items = Vec::with_capacity(chosen.len());
    for (o, old) in chosen {
        let ns = (!o.namespace.is_empty()).then_some(o.namespace.as_str());
        let attrs = super::webhooks::Attributes {
            tk: t.tk,
            namespace: ns,
            name: "",
            subresource: None,
            operation: "DELETE",
            dry_run: d.dry_run,
            options: super::webhooks::options("DELETE", d.dry_run, None, None, Some(d)),
            user: user.clone(),
        };
        warnings.extend(super::webhooks::admit(shared, &attrs, None, Some(&old))?.warnings);
        match shared.store.lock().delete_with(t.tk, ns, &o.name, d) {
            Ok(_) => items.push(o),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = shared.store.lock().rv;
    Ok((items, rv))
}
