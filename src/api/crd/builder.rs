//! `CrdBuilder`: a CustomResourceDefinition from the types of a custom resource's spec and
//! status, without hand-written YAML.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use super::error::CrdError;
use super::structural;
use crate::api::Resource;

/// An `additionalPrinterColumns` entry: a column `kubectl get` shows for the resource.
///
/// ```
/// use kube_informer::api::crd::PrinterColumn;
/// let age = PrinterColumn::new("Age", "date", ".metadata.creationTimestamp");
/// let ready = PrinterColumn::new("Ready", "boolean", ".status.ready")
///     .description("Whether the widget is ready")
///     .priority(1); // only with `kubectl get -o wide`
/// # let _ = (age, ready);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    name: String,
    type_: String,
    json_path: String,
    description: Option<String>,
    format: Option<String>,
    priority: Option<u32>,
}

impl PrinterColumn {
    /// A column `name` of `type_` (`integer`, `number`, `string`, `boolean` or `date`)
    /// showing the value at `json_path` (`.spec.size`).
    pub fn new(name: &str, type_: &str, json_path: &str) -> Self {
        PrinterColumn {
            name: name.to_owned(),
            type_: type_.to_owned(),
            json_path: json_path.to_owned(),
            description: None,
            format: None,
            priority: None,
        }
    }

    /// The column's description (`kubectl explain`, API docs).
    pub fn description(mut self, text: &str) -> Self {
        self.description = Some(text.to_owned());
        self
    }

    /// An OpenAPI format for the value (`int32`, `date-time`, ...).
    pub fn format(mut self, format: &str) -> Self {
        self.format = Some(format.to_owned());
        self
    }

    /// The column's priority: 0 (the default) is shown always, higher only with `-o wide`.
    pub fn priority(mut self, priority: u32) -> Self {
        self.priority = Some(priority);
        self
    }

    fn to_json(&self) -> Value {
        let mut c = json!({"name": self.name, "type": self.type_, "jsonPath": self.json_path});
        if let Some(d) = &self.description {
            c["description"] = d.as_str().into();
        }
        if let Some(f) = &self.format {
            c["format"] = f.as_str().into();
        }
        if let Some(p) = self.priority {
            c["priority"] = p.into();
        }
        c
    }
}

#[derive(Clone, Debug)]
struct Scale {
    spec_replicas: String,
    status_replicas: String,
    label_selector: Option<String>,
}

#[derive(Clone, Debug)]
struct Version {
    name: String,
    served: bool,
    storage: bool,
    deprecated: Option<Option<String>>,
    spec: Result<Value, CrdError>,
    status: Option<Result<Value, CrdError>>,
    scale: Option<Scale>,
    columns: Vec<PrinterColumn>,
}

/// Builds an `apiextensions.k8s.io/v1` CustomResourceDefinition from the
/// [`JsonSchema`](schemars::JsonSchema) of a spec type (and a status type): a structural
/// `openAPIV3Schema` (see the [module docs](super)), names, scope, versions, subresources and
/// printer columns.
///
/// The methods that shape one version (`status`, `scale_subresource`, `printer_column`,
/// `served`, `storage`, `deprecated`) apply to the version added last: the one of
/// [`new`](Self::new), or of the latest [`version`](Self::version).
///
/// Defaults: namespaced; the plural is the kind in lower case with an English plural ending
/// (`Widget` → `widgets`, `Policy` → `policies`; set [`plural`](Self::plural) for others);
/// the singular is the kind in lower case; the first version is served and the storage
/// version; `spec` is required, `status` is not.
///
/// ```
/// use kube_informer::api::crd::{CrdBuilder, PrinterColumn};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// What a widget should be.
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// struct WidgetSpec {
///     /// How many parts.
///     #[schemars(range(min = 0))]
///     size: i32,
///     color: Option<Color>,
/// }
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// enum Color { Red, Blue }
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct WidgetStatus {
///     ready: bool,
/// }
///
/// let crd = CrdBuilder::new::<WidgetSpec>("lab.example.com", "v1", "Widget")
///     .short_names(["wdg"])
///     .status::<WidgetStatus>()
///     .printer_column(PrinterColumn::new("Size", "integer", ".spec.size"))
///     .build()?;
/// assert_eq!(crd["metadata"]["name"], "widgets.lab.example.com");
/// let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
/// assert_eq!(schema["properties"]["spec"]["properties"]["color"],
///            serde_json::json!({"type": "string", "enum": ["Red", "Blue"], "nullable": true}));
/// assert_eq!(crd["spec"]["versions"][0]["subresources"]["status"], serde_json::json!({}));
/// # Ok::<(), kube_informer::api::crd::CrdError>(())
/// ```
#[derive(Clone, Debug)]
pub struct CrdBuilder {
    group: String,
    kind: String,
    plural: Option<String>,
    singular: Option<String>,
    list_kind: Option<String>,
    short_names: Vec<String>,
    categories: Vec<String>,
    namespaced: bool,
    versions: Vec<Version>,
}

/// The structural schema of `T`, found at `.{part}`; it must be an object.
fn schema_for<T: JsonSchema>(part: &str) -> Result<Value, CrdError> {
    let generator = SchemaSettings::openapi3()
        .with(|s| {
            // No `$ref`s: every type written out where it is used.
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(m) = &mut schema {
        // The type's name, and the definitions of recursive types (whose `$ref`s the rewrite
        // refuses by name).
        for k in ["title", "$schema", "components", "$defs", "definitions"] {
            m.remove(k);
        }
    }
    let path = format!(".{part}");
    let schema = structural::rewrite(schema, &path)?;
    if schema["type"] != "object" {
        return Err(CrdError::at(
            &path,
            format!(
                "must be an object (a struct with named fields), not {}",
                schema.get("type").unwrap_or(&Value::Null)
            ),
        ));
    }
    Ok(schema)
}

/// `Widget` → `widgets`, `Policy` → `policies`, `Ingress` → `ingresses`.
fn plural_of(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    let consonant_y = lower.ends_with('y')
        && !lower.ends_with("ay")
        && !lower.ends_with("ey")
        && !lower.ends_with("oy")
        && !lower.ends_with("uy");
    if consonant_y {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// A DNS-1035 label: lower case alphanumerics and `-`, a letter first, alphanumeric last.
fn is_dns1035_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The node of `schema` (a CRD's root) at `.spec.replicas`, if it declares one.
fn schema_at<'s>(schema: &'s Value, path: &str) -> Option<&'s Value> {
    path.strip_prefix('.')?
        .split('.')
        .try_fold(schema, |s, part| s.get("properties")?.get(part))
}

impl CrdBuilder {
    /// A namespaced custom resource `kind` in `group` (which needs a dot, e.g.
    /// `lab.example.com`) whose `spec` is described by `Spec`, served and stored at
    /// `version`.
    pub fn new<Spec: JsonSchema>(group: &str, version: &str, kind: &str) -> Self {
        CrdBuilder {
            group: group.to_owned(),
            kind: kind.to_owned(),
            plural: None,
            singular: None,
            list_kind: None,
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced: true,
            versions: Vec::new(),
        }
        .add_version::<Spec>(version, true)
    }

    /// The definition of a [`Resource`] type (from [`resource!`](crate::resource) or by
    /// hand): its group, version, kind, plural and scope, with `Spec` for its `spec`. The
    /// resource type itself needs no schema: its metadata is the server's.
    ///
    /// ```
    /// use kube_informer::api::crd::CrdBuilder;
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Clone, Debug, Default)]
    /// pub struct BackupSpec { schedule: String }
    ///
    /// kube_informer::resource! {
    ///     #[resource(group = "ops.example.com", version = "v1", kind = "Backup", plural = "backups", cluster)]
    ///     pub struct Backup { pub spec: BackupSpec }
    /// }
    ///
    /// let crd = CrdBuilder::for_resource::<Backup, BackupSpec>().build()?;
    /// assert_eq!(crd["spec"]["scope"], "Cluster");
    /// assert_eq!(crd["metadata"]["name"], "backups.ops.example.com");
    /// # Ok::<(), kube_informer::api::crd::CrdError>(())
    /// ```
    pub fn for_resource<K: Resource, Spec: JsonSchema>() -> Self {
        let mut b = Self::new::<Spec>(K::GROUP, K::VERSION, K::KIND).plural(K::PLURAL);
        b.namespaced = K::NAMESPACED;
        b
    }

    fn add_version<Spec: JsonSchema>(mut self, name: &str, storage: bool) -> Self {
        self.versions.push(Version {
            name: name.to_owned(),
            served: true,
            storage,
            deprecated: None,
            spec: schema_for::<Spec>("spec"),
            status: None,
            scale: None,
            columns: Vec::new(),
        });
        self
    }

    fn current(&mut self) -> &mut Version {
        // `new` adds the first version and nothing removes one.
        let last = self.versions.len() - 1;
        &mut self.versions[last]
    }

    /// The plural name (`widgets`), used in URLs and in the CRD's name `PLURAL.GROUP`.
    pub fn plural(mut self, plural: &str) -> Self {
        self.plural = Some(plural.to_owned());
        self
    }

    /// The singular name (`widget`), an alias in `kubectl`.
    pub fn singular(mut self, singular: &str) -> Self {
        self.singular = Some(singular.to_owned());
        self
    }

    /// The kind of the resource's lists; `KIND` + `List` by default.
    pub fn list_kind(mut self, list_kind: &str) -> Self {
        self.list_kind = Some(list_kind.to_owned());
        self
    }

    /// Short names (`wdg`) for `kubectl get`.
    pub fn short_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.short_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// Categories (`all`) the resource belongs to, for `kubectl get CATEGORY`.
    pub fn categories<I, S>(mut self, categories: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.categories
            .extend(categories.into_iter().map(Into::into));
        self
    }

    /// Objects live in namespaces (the default).
    pub fn namespaced(mut self) -> Self {
        self.namespaced = true;
        self
    }

    /// Objects are cluster-scoped.
    pub fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    /// Adds a version whose `spec` is `Spec`: served, not the storage version (see
    /// [`storage`](Self::storage)). The version methods that follow apply to it.
    pub fn version<Spec: JsonSchema>(self, name: &str) -> Self {
        self.add_version::<Spec>(name, false)
    }

    /// The current version's `status` is `Status`, and it gets the `status` subresource
    /// (writes of the main resource ignore `status`, writes of `/status` ignore the rest),
    /// as nearly every controller wants.
    pub fn status<Status: JsonSchema>(mut self) -> Self {
        self.current().status = Some(schema_for::<Status>("status"));
        self
    }

    /// The `scale` subresource of the current version (for `kubectl scale` and autoscalers):
    /// the JSON paths of the desired replicas (`.spec.replicas`), of the current replicas
    /// (`.status.replicas`) and, optionally, of the label selector as a string
    /// (`.status.selector`). The paths must name integer fields of the spec and status
    /// types (and the selector a string), as kube-apiserver requires.
    pub fn scale_subresource(
        mut self,
        spec_replicas_path: &str,
        status_replicas_path: &str,
        label_selector_path: Option<&str>,
    ) -> Self {
        self.current().scale = Some(Scale {
            spec_replicas: spec_replicas_path.to_owned(),
            status_replicas: status_replicas_path.to_owned(),
            label_selector: label_selector_path.map(str::to_owned),
        });
        self
    }

    /// Adds a printer column to the current version.
    pub fn printer_column(mut self, column: PrinterColumn) -> Self {
        self.current().columns.push(column);
        self
    }

    /// Whether the current version is served (true by default).
    pub fn served(mut self, served: bool) -> Self {
        self.current().served = served;
        self
    }

    /// Makes the current version the storage version (and no other).
    pub fn storage(mut self) -> Self {
        for v in &mut self.versions {
            v.storage = false;
        }
        self.current().storage = true;
        self
    }

    /// Marks the current version deprecated, with a warning for clients that use it (the
    /// server's default warning when `None`).
    pub fn deprecated(mut self, warning: Option<&str>) -> Self {
        self.current().deprecated = Some(warning.map(str::to_owned));
        self
    }

    /// The CRD's name: `PLURAL.GROUP`.
    pub fn name(&self) -> String {
        format!("{}.{}", self.plural_name(), self.group)
    }

    fn plural_name(&self) -> String {
        self.plural.clone().unwrap_or_else(|| plural_of(&self.kind))
    }

    /// The CustomResourceDefinition as JSON, ready for
    /// `Api::<DynamicObject>::create` (or `serde_json::from_value` into k8s-openapi's type).
    /// An error names the field whose type has no structural schema, or the part of the
    /// definition the server would refuse.
    pub fn build(&self) -> Result<Value, CrdError> {
        let plural = self.plural_name();
        let singular = self
            .singular
            .clone()
            .unwrap_or_else(|| self.kind.to_ascii_lowercase());
        self.check_names(&plural, &singular)?;
        let mut versions = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for (i, v) in self.versions.iter().enumerate() {
            if seen.contains(&v.name.as_str()) {
                return Err(CrdError::at(
                    &format!("spec.versions[{i}].name"),
                    format!("{:?} is given twice", v.name),
                ));
            }
            seen.push(&v.name);
            versions.push(self.version_json(i, v)?);
        }
        match self.versions.iter().filter(|v| v.storage).count() {
            1 => {}
            n => {
                return Err(CrdError::at(
                    "spec.versions",
                    format!("must have exactly one storage version, not {n}"),
                ))
            }
        }
        if self.versions.iter().any(|v| v.storage && !v.served) {
            return Err(CrdError::at(
                "spec.versions",
                "the storage version must be served",
            ));
        }
        let mut names = json!({
            "plural": plural,
            "singular": singular,
            "kind": self.kind,
            "listKind": self.list_kind.clone().unwrap_or_else(|| format!("{}List", self.kind)),
        });
        if !self.short_names.is_empty() {
            names["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            names["categories"] = json!(self.categories);
        }
        Ok(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{}", self.group)},
            "spec": {
                "group": self.group,
                "names": names,
                "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
                "versions": versions,
            },
        }))
    }

    /// [`build`](Self::build), as YAML for `kubectl apply -f` or a Helm chart's `crds/`.
    pub fn build_yaml(&self) -> Result<String, CrdError> {
        let crd = self.build()?;
        serde_yaml::to_string(&crd).map_err(|e| CrdError::at("", e.to_string()))
    }

    fn check_names(&self, plural: &str, singular: &str) -> Result<(), CrdError> {
        let subdomain = |s: &str| {
            s.split('.').all(|l| {
                !l.is_empty()
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
        };
        if !self.group.contains('.') || !subdomain(&self.group) {
            return Err(CrdError::at(
                "spec.group",
                format!(
                    "{:?} should be a lower case domain with at least one dot (e.g. \
                     lab.example.com)",
                    self.group
                ),
            ));
        }
        for (field, name) in [("plural", plural), ("singular", singular)] {
            if !is_dns1035_label(name) {
                return Err(CrdError::at(
                    &format!("spec.names.{field}"),
                    format!("{name:?} must be a lower case DNS-1035 label (e.g. widgets)"),
                ));
            }
        }
        for s in &self.short_names {
            if !is_dns1035_label(s) {
                return Err(CrdError::at(
                    "spec.names.shortNames",
                    format!("{s:?} must be a lower case DNS-1035 label"),
                ));
            }
        }
        let kind_ok = self.kind.starts_with(|c: char| c.is_ascii_alphabetic())
            && self.kind.chars().all(|c| c.is_ascii_alphanumeric());
        if !kind_ok {
            return Err(CrdError::at(
                "spec.names.kind",
                format!("{:?} must be letters and digits, a letter first", self.kind),
            ));
        }
        Ok(())
    }

    fn version_json(&self, i: usize, v: &Version) -> Result<Value, CrdError> {
        let at = |rest: &str| format!("spec.versions[{i}].{rest}");
        if !is_dns1035_label(&v.name) {
            return Err(CrdError::at(
                &at("name"),
                format!("{:?} must be a lower case DNS-1035 label (e.g. v1)", v.name),
            ));
        }
        let mut properties = Map::new();
        properties.insert("apiVersion".into(), json!({"type": "string"}));
        properties.insert("kind".into(), json!({"type": "string"}));
        // The server's own: describing it beyond `type: object` is refused.
        properties.insert("metadata".into(), json!({"type": "object"}));
        properties.insert("spec".into(), v.spec.clone()?);
        let mut subresources = Map::new();
        if let Some(status) = &v.status {
            properties.insert("status".into(), status.clone()?);
            subresources.insert("status".into(), json!({}));
        }
        let root = json!({"type": "object", "properties": properties, "required": ["spec"]});
        if let Some(s) = &v.scale {
            let mut scale = json!({
                "specReplicasPath": s.spec_replicas,
                "statusReplicasPath": s.status_replicas,
            });
            let mut paths = vec![
                ("specReplicasPath", &s.spec_replicas, ".spec.", "integer"),
                (
                    "statusReplicasPath",
                    &s.status_replicas,
                    ".status.",
                    "integer",
                ),
            ];
            if let Some(l) = &s.label_selector {
                scale["labelSelectorPath"] = l.as_str().into();
                let under = if l.starts_with(".spec.") {
                    ".spec."
                } else {
                    ".status."
                };
                paths.push(("labelSelectorPath", l, under, "string"));
            }
            for (field, path, under, ty) in paths {
                let declared = schema_at(&root, path).and_then(|s| s.get("type"));
                if !path.starts_with(under) || declared != Some(&Value::from(ty)) {
                    return Err(CrdError::at(
                        &at(&format!("subresources.scale.{field}")),
                        format!("{path:?} should be a JSON path under {under} naming a field of type {ty}"),
                    ));
                }
            }
            subresources.insert("scale".into(), scale);
        }
        let mut out = json!({
            "name": v.name,
            "served": v.served,
            "storage": v.storage,
            "schema": {"openAPIV3Schema": root},
        });
        if let Some(warning) = &v.deprecated {
            out["deprecated"] = true.into();
            if let Some(w) = warning {
                out["deprecationWarning"] = w.as_str().into();
            }
        }
        if !subresources.is_empty() {
            out["subresources"] = Value::Object(subresources);
        }
        if !v.columns.is_empty() {
            for (j, c) in v.columns.iter().enumerate() {
                let types = ["integer", "number", "string", "boolean", "date"];
                if !types.contains(&c.type_.as_str()) {
                    return Err(CrdError::at(
                        &at(&format!("additionalPrinterColumns[{j}].type")),
                        format!("{:?} must be one of {}", c.type_, types.join(", ")),
                    ));
                }
                if c.name.is_empty() || !c.json_path.starts_with('.') {
                    return Err(CrdError::at(
                        &at(&format!("additionalPrinterColumns[{j}]")),
                        "needs a name and a JSON path starting with `.`",
                    ));
                }
            }
            out["additionalPrinterColumns"] =
                Value::Array(v.columns.iter().map(PrinterColumn::to_json).collect());
        }
        Ok(out)
    }
}
