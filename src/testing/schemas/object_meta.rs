//! kube-apiserver's checks of an object's `metadata`, message for message: the name (and a
//! `generateName`), label keys and values, annotation keys and their total size, finalizers,
//! and owner references.
//!
//! Why a file of its own: operators write custom resources whose metadata the real server
//! refuses (an upper-case name, a finalizer with a space, two controllers), and a test server
//! that takes them lets a bug through to the cluster. The rules here are apimachinery's
//! (`ValidateObjectMetaAccessor`, `IsDNS1123Subdomain`, `IsQualifiedName`,
//! `IsValidLabelValue`, `ValidateAnnotations`, `ValidateFinalizers`,
//! `ValidateOwnerReferences`), written again in our own words; each returns the problem
//! texts the server would report, so the callers decide the field and how often (see
//! `validation.rs`).
//!
//! Not captured, our reading of the source: the total-size message of annotations and the
//! rendering of a whole ownerReferences list in the two-controllers message (Go prints its
//! structs with `%#v`, pointer addresses included, which no capture can pin down).

use serde_json::{Map, Value};

use super::validation::FieldError;

/// The regex in the subdomain message, as the server quotes it.
const SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const QUALIFIED_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// The longest DNS-1123 subdomain.
const SUBDOMAIN_MAX: usize = 253;
/// The longest name part of a qualified name, and the longest label value.
const NAME_PART_MAX: usize = 63;
/// The most bytes all annotations (keys and values) may hold together.
pub(crate) const ANNOTATIONS_MAX: usize = 256 * 1024;
/// How much of a `generateName` the server keeps before its 5 random characters.
pub(crate) const GENERATE_PREFIX_MAX: usize = 58;

/// apimachinery's `RegexError`: the rule, examples each followed by `', '` and joined with
/// `" or "` (hence the double spaces), then the regex.
fn regex_error(rule: &str, fmt: &str, examples: &[&str]) -> String {
    let shown: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{rule} (e.g. {}regex used for validation is '{fmt}')",
        shown.join(" or ")
    )
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn subdomain_regex_error() -> String {
    regex_error(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        SUBDOMAIN_FMT,
        &["example.com"],
    )
}

fn qualified_regex_error() -> String {
    regex_error(
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        QUALIFIED_FMT,
        &["MyName", "my.name", "123-abc"],
    )
}

fn lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// One dot-separated part of a subdomain: `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no length limit
/// of its own: a subdomain's parts may be longer than a DNS label).
fn subdomain_part(s: &str) -> bool {
    s.starts_with(lower_alnum)
        && s.ends_with(lower_alnum)
        && s.chars().all(|c| lower_alnum(c) || c == '-')
}

/// `IsDNS1123Subdomain`: the length, then the characters; both may be reported.
pub(crate) fn subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > SUBDOMAIN_MAX {
        errs.push(max_len_error(SUBDOMAIN_MAX));
    }
    if !s.split('.').all(subdomain_part) {
        errs.push(subdomain_regex_error());
    }
    errs
}

/// `NameIsDNSSubdomain`: a `generateName` is checked with a trailing `-` masked (the random
/// suffix will follow it).
pub(crate) fn name_errors(name: &str, prefix: bool) -> Vec<String> {
    if prefix && name.len() > 1 && name.ends_with('-') {
        let masked = format!("{}a", &name[..name.len() - 1]);
        return subdomain_errors(&masked);
    }
    subdomain_errors(name)
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, the name part of a qualified name and the
/// body of a label value.
fn label_token(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.starts_with(alnum)
        && s.ends_with(alnum)
        && s.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// `IsQualifiedName`: `[prefix/]name`, the prefix a subdomain, the name a token of at most
/// 63 characters.
pub(crate) fn qualified_name_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                for m in subdomain_errors(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                qualified_regex_error()
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > NAME_PART_MAX {
        errs.push(format!("name part {}", max_len_error(NAME_PART_MAX)));
    }
    if !label_token(name) {
        errs.push(format!("name part {}", qualified_regex_error()));
    }
    errs
}

/// `IsValidLabelValue`: empty, or a token of at most 63 characters.
pub(crate) fn label_value_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > NAME_PART_MAX {
        errs.push(max_len_error(NAME_PART_MAX));
    }
    if !s.is_empty() && !label_token(s) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// The problems of `metadata.labels`, each key's before its value's.
pub(crate) fn labels(labels: &Map<String, Value>) -> Vec<FieldError> {
    let field = "metadata.labels";
    let mut out = Vec::new();
    for (k, v) in labels {
        for m in qualified_name_errors(k) {
            out.push(FieldError::invalid(field, &Value::from(k.as_str()), &m));
        }
        match v.as_str() {
            Some(s) => {
                for m in label_value_errors(s) {
                    out.push(FieldError::invalid(field, v, &m));
                }
            }
            None => out.push(FieldError::type_invalid(field, v, "must be a string")),
        }
    }
    out
}

/// The problems of `metadata.annotations`: keys are qualified names (case does not matter),
/// and keys and values together hold at most 256 KiB.
pub(crate) fn annotations(annotations: &Map<String, Value>) -> Vec<FieldError> {
    let field = "metadata.annotations";
    let mut out = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations {
        for m in qualified_name_errors(&k.to_ascii_lowercase()) {
            out.push(FieldError::invalid(field, &Value::from(k.as_str()), &m));
        }
        total = total.saturating_add(k.len());
        match v.as_str() {
            Some(s) => total = total.saturating_add(s.len()),
            None => out.push(FieldError::type_invalid(field, v, "must be a string")),
        }
    }
    if total > ANNOTATIONS_MAX {
        out.push(FieldError::too_long(
            field,
            &format!("may not be more than {ANNOTATIONS_MAX} bytes"),
        ));
    }
    out
}

/// The strings of a list (anything else is none).
fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The problems of `metadata.finalizers`: each a qualified name, and not both `orphan` and
/// `foregroundDeletion`.
pub(crate) fn finalizers(list: Option<&Value>) -> Vec<FieldError> {
    let field = "metadata.finalizers";
    let mut out = Vec::new();
    let names = strings(list);
    for f in &names {
        for m in qualified_name_errors(f) {
            out.push(FieldError::invalid(field, &Value::from(*f), &m));
        }
    }
    if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
        let shown: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
        out.push(FieldError {
            reason: "FieldValueInvalid",
            field: field.to_owned(),
            text: format!(
                "Invalid value: []string{{{}}}: finalizer orphan and foregroundDeletion cannot be both set",
                shown.join(", ")
            ),
        });
    }
    out
}

/// The warnings of finalizers a write adds (those in `new` not in `old`), sorted: one for
/// each that has no domain (no `/`) and is not one of Kubernetes' own.
pub(crate) fn finalizer_warnings(new: Option<&Value>, old: Option<&Value>) -> Vec<String> {
    let before: std::collections::HashSet<&str> = strings(old).into_iter().collect();
    let mut added: Vec<&str> = strings(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    added.sort_unstable();
    added.dedup();
    added
        .into_iter()
        .filter(|f| !f.contains('/') && !matches!(*f, "kubernetes" | "orphan" | "foregroundDeletion"))
        .filter(|f| qualified_name_errors(f).is_empty())
        .map(|f| {
            format!(
                "metadata.finalizers: {}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                Value::from(f)
            )
        })
        .collect()
}

/// A string field of an owner reference ("" when absent or not a string).
fn text<'a>(r: &'a Value, key: &str) -> &'a str {
    r.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `schema.ParseGroupVersion` as `FromAPIVersionAndKind` uses it: (group, version); a value
/// with more than one `/` parses as neither.
fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        None => ("", api_version),
        Some((g, v)) if !v.contains('/') => (g, v),
        Some(_) => ("", ""),
    }
}

/// Go's `%#v` of one owner reference (pointers shown as Go shows a pointer: an address, here
/// a fixed one, or `nil`).
fn go_owner(r: &Value) -> String {
    let ptr = |key: &str| match r.get(key).and_then(Value::as_bool) {
        Some(_) => "(*bool)(0xc000000000)".to_owned(),
        None => "(*bool)(nil)".to_owned(),
    };
    format!(
        "v1.OwnerReference{{APIVersion:{:?}, Kind:{:?}, Name:{:?}, UID:{:?}, Controller:{}, BlockOwnerDeletion:{}}}",
        text(r, "apiVersion"),
        text(r, "kind"),
        text(r, "name"),
        text(r, "uid"),
        ptr("controller"),
        ptr("blockOwnerDeletion"),
    )
}

/// How many "only one controller" errors one list gets at most (Go reports one per extra
/// controller; past a few, the rest say nothing new).
const MAX_CONTROLLER_ERRORS: usize = 4;
/// How much of a quoted ownerReferences list is shown at most.
const MAX_RENDERED: usize = 64 * 1024;

/// Go's `%#v` of an ownerReferences list, cut (with `...`) past [`MAX_RENDERED`] bytes.
fn go_owners(refs: &[Value]) -> String {
    let mut s = String::from("[]v1.OwnerReference{");
    for (i, r) in refs.iter().enumerate() {
        if s.len() > MAX_RENDERED {
            s.push_str("...");
            break;
        }
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(&go_owner(r));
    }
    s.push('}');
    s
}

/// The problems of `metadata.ownerReferences`: each needs an apiVersion with a version, a
/// kind, a name and a uid, no Event may own anything, and at most one is the controller.
pub(crate) fn owner_references(list: Option<&Value>) -> Vec<FieldError> {
    let field = "metadata.ownerReferences";
    let Some(refs) = list.and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut first_controller: Option<String> = None;
    // Each further controller's error quotes the whole list (as Go's does): rendered once,
    // bounded, and reported for a few controllers only, so a hostile list of thousands of
    // controllers costs a bounded answer.
    let mut rendered: Option<String> = None;
    let mut reported = 0;
    for r in refs {
        let (group, version) = group_version(text(r, "apiVersion"));
        let kind = text(r, "kind");
        if version.is_empty() {
            out.push(FieldError::invalid(
                &format!("{field}.apiVersion"),
                &Value::from(text(r, "apiVersion")),
                "version must not be empty",
            ));
        }
        for key in ["kind", "name", "uid"] {
            if text(r, key).is_empty() {
                out.push(FieldError::invalid(
                    &format!("{field}.{key}"),
                    &Value::from(text(r, key)),
                    "must not be empty",
                ));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            out.push(FieldError {
                reason: "FieldValueInvalid",
                field: field.to_owned(),
                text: format!(
                    "Invalid value: {}: /v1, Kind=Event is disallowed from being an owner",
                    go_owner(r)
                ),
            });
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{kind}/{}", text(r, "name"));
            match &first_controller {
                Some(_) if reported >= MAX_CONTROLLER_ERRORS => {}
                Some(first) => {
                    let all = rendered.get_or_insert_with(|| go_owners(refs));
                    out.push(FieldError {
                        reason: "FieldValueInvalid",
                        field: field.to_owned(),
                        text: format!(
                            "Invalid value: {all}: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                        ),
                    });
                    reported += 1;
                }
                None => first_controller = Some(this),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subdomains() {
        assert!(subdomain_errors("md.a.b").is_empty());
        assert!(subdomain_errors(&"m".repeat(64)).is_empty());
        assert!(subdomain_errors(&"m".repeat(253)).is_empty());
        assert_eq!(
            subdomain_errors(&"m".repeat(254)),
            vec!["must be no more than 253 characters"]
        );
        assert_eq!(subdomain_errors(&"M".repeat(254)).len(), 2);
        for bad in ["Bad_Name", "-a", "a-", "a..b", ".a", "", "é"] {
            assert_eq!(subdomain_errors(bad).len(), 1, "{bad}");
        }
        assert!(name_errors("md-gen-", true).is_empty());
        assert_eq!(name_errors("Bad-gen-", true).len(), 1);
        assert_eq!(name_errors("-", true).len(), 1);
    }

    #[test]
    fn qualified_names() {
        assert!(qualified_name_errors("example.com/My_Name.1").is_empty());
        assert_eq!(
            qualified_name_errors("/x"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(qualified_name_errors("a/b/c").len(), 1);
        assert_eq!(qualified_name_errors("x/").len(), 2);
        assert_eq!(
            qualified_name_errors(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
        assert!(qualified_name_errors("Bad.Prefix/x")[0].starts_with("prefix part a lowercase"));
    }

    #[test]
    fn owners() {
        let two = json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "Secret", "name": "b", "uid": "2", "controller": true}
        ]);
        let e = owner_references(Some(&two));
        assert_eq!(e.len(), 1);
        assert!(e[0]
            .text
            .ends_with("Found \"true\" in references for ConfigMap/a and Secret/b"));
        let bad = json!([{"apiVersion": "apps/", "kind": "", "name": "", "uid": ""}]);
        let fields: Vec<String> = owner_references(Some(&bad))
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(
            fields,
            [
                "metadata.ownerReferences.apiVersion",
                "metadata.ownerReferences.kind",
                "metadata.ownerReferences.name",
                "metadata.ownerReferences.uid"
            ]
        );
        assert!(owner_references(Some(&json!(["x"]))).len() == 4);
    }

    #[test]
    fn many_controllers_cost_a_bounded_answer() {
        let refs: Vec<Value> = (0..20_000)
            .map(|i| {
                json!({"apiVersion": "v1", "kind": "ConfigMap", "name": format!("c{i}"),
                "uid": format!("u{i}"), "controller": true})
            })
            .collect();
        let e = owner_references(Some(&Value::from(refs)));
        assert_eq!(e.len(), MAX_CONTROLLER_ERRORS);
        assert!(e.iter().all(|e| e.text.len() < 2 * MAX_RENDERED), "bounded");
        assert!(e[0].text.contains("...}"));
    }

    #[test]
    fn many_finalizers_are_linear() {
        let list: Vec<Value> = (0..200_000).map(|i| format!("f{i}").into()).collect();
        let list = Value::from(list);
        assert_eq!(finalizer_warnings(Some(&list), None).len(), 200_000);
        assert!(finalizer_warnings(Some(&list), Some(&list)).is_empty());
    }

    #[test]
    fn finalizer_names_and_warnings() {
        let list = json!(["nodomain", "example.com/ok", "orphan", "bad one"]);
        assert_eq!(finalizers(Some(&list)).len(), 1);
        let w = finalizer_warnings(Some(&list), None);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("metadata.finalizers: \"nodomain\": prefer"));
        assert!(finalizer_warnings(Some(&list), Some(&list)).is_empty());
        let both = json!(["orphan", "foregroundDeletion"]);
        assert_eq!(finalizers(Some(&both)).len(), 1);
    }

    #[test]
    fn annotation_size() {
        let mut m = Map::new();
        m.insert("k".into(), "v".repeat(ANNOTATIONS_MAX - 1).into());
        assert!(annotations(&m).is_empty());
        m.insert("k2".into(), "v".into());
        let e = annotations(&m);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].reason, "FieldValueTooLong");
        m.clear();
        m.insert("Upper.Case/Key".into(), "".into());
        assert!(annotations(&m).is_empty(), "case does not matter");
        m.insert("bad key!".into(), "".into());
        assert_eq!(annotations(&m).len(), 1);
    }
}
