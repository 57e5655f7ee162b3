//! The deserializer against serde_json: the same value, or an error from both, for each
//! serde feature; then a seeded model test over generated documents and types.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::*;
use crate::api::{ObjectMeta, RawJson};

/// Decodes `json` both ways; both must fail or both give the same value. Returns the value.
#[track_caller]
fn same<T>(json: &str) -> Option<T>
where
    T: DeserializeOwned + PartialEq + Debug,
{
    let theirs = serde_json::from_str::<T>(json);
    let ours = from_str::<T>(json);
    match (theirs, ours) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "{json}");
            Some(b)
        }
        (Err(_), Err(_)) => None,
        (a, b) => panic!(
            "{json}: serde_json gave {a:?}, ours gave {b:?} ({})",
            std::any::type_name::<T>()
        ),
    }
}

#[track_caller]
fn ok<T: DeserializeOwned + PartialEq + Debug>(json: &str) -> T {
    same::<T>(json).unwrap_or_else(|| panic!("both refused {json}"))
}

#[track_caller]
fn err<T: DeserializeOwned + PartialEq + Debug>(json: &str) {
    assert!(same::<T>(json).is_none(), "both accepted {json}");
}

#[derive(Debug, PartialEq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Slim {
    name: Option<String>,
    #[serde(default)]
    count: u32,
    #[serde(default)]
    items: Vec<i64>,
    #[serde(default)]
    inner: Option<Box<Slim>>,
}

#[test]
fn numbers_keep_serde_json_precision_and_range() {
    for n in [
        "0",
        "-0",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "1.5",
        "1e3",
        "-1e-3",
        "0.1",
        "1e308",
        "1e400",
        "2.2250738585072014e-308",
        "123456789012345678901234567890",
        // Around the integers visited here (at most 18 digits) and handed over (longer).
        "999999999999999999",
        "-999999999999999999",
        "1000000000000000000",
        "-1000000000000000000",
        "9223372036854775807",
        "-9223372036854775808",
        "255",
        "256",
        "-128",
        "-129",
        "65535",
        "-32769",
        "4294967296",
        "-2147483649",
        "-1",
        " 7 ",
        "0e0",
        "-0.0",
        "false",
        " true ",
        "-",
        "01",
        "1.",
        "\"1\"",
        "null",
        "true",
        "[1]",
        "{}",
    ] {
        same::<u8>(n);
        same::<i8>(n);
        same::<u16>(n);
        same::<i16>(n);
        same::<i32>(n);
        same::<u32>(n);
        same::<i64>(n);
        same::<u64>(n);
        same::<i128>(n);
        same::<u128>(n);
        same::<f32>(n);
        same::<f64>(n);
        same::<Value>(n);
        same::<Option<u64>>(n);
        same::<bool>(n);
        same::<()>(n);
        same::<char>(n);
        same::<String>(n);
    }
    assert_eq!(ok::<Value>("[18446744073709551615, -1, 0.5]")[0], u64::MAX);
}

#[test]
fn strings_unescape_and_refuse_as_serde_json_does() {
    for s in [
        r#""plain""#,
        r#""tab\there""#,
        r#""\u00e9\ud83d\ude00""#,
        r#""\ud800""#,
        r#""\udc00x""#,
        r#""a\u0000b""#,
        "\"ctl\u{1}\"",
        r#""bad\x""#,
        r#""é""#,
        r#""\"\\\/\b\f\n\r\t""#,
    ] {
        same::<String>(s);
        same::<char>(s);
        same::<Value>(s);
        same::<Vec<String>>(&format!("[{s}]"));
        same::<serde::de::IgnoredAny>(s).map(|_| ()).unwrap_or(());
        same::<BTreeMap<String, u8>>(&format!("{{{s}: 1}}"));
        same::<Slim>(&format!(r#"{{"name": {s}}}"#));
        same::<Slim>(&format!(r#"{{"unknown": {s}}}"#));
        same::<Slim>(&format!(r#"{{{s}: 1}}"#));
    }
}

impl PartialEq for IgnoredWrap {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
#[derive(Debug, Deserialize)]
struct IgnoredWrap(#[allow(dead_code)] serde::de::IgnoredAny);

#[test]
fn borrowed_strings_are_lent_only_without_escapes() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Borrow<'a> {
        name: &'a str,
    }
    let plain = r#"{"name":"web"}"#;
    let a: Borrow = serde_json::from_str(plain).unwrap();
    let b: Borrow = from_str(plain).unwrap();
    assert_eq!(a, b);
    let escaped = r#"{"name":"w\neb"}"#;
    assert!(serde_json::from_str::<Borrow>(escaped).is_err());
    assert!(from_str::<Borrow>(escaped).is_err());
    // Cow borrows where serde_json does (with `borrow`), never otherwise.
    #[derive(Deserialize, Debug, PartialEq)]
    struct CowBorrow<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
    }
    let c: CowBorrow = from_str(plain).unwrap();
    assert!(matches!(c.name, Cow::Borrowed("web")));
    let c: CowBorrow = from_str(escaped).unwrap();
    assert!(matches!(c.name, Cow::Owned(_)));
}

#[test]
fn null_option_missing_unknown_and_duplicate_fields() {
    ok::<Slim>(r#"{"name":null,"count":3}"#);
    ok::<Slim>(r#"{}"#);
    ok::<Slim>(r#"{"other":{"deep":[1,{"x":null}]},"name":"n","more":[]}"#);
    err::<Slim>(r#"{"name":"a","name":"b"}"#);
    err::<Slim>(r#"{"count":null}"#);
    err::<Slim>(r#"{"count":-1}"#);
    err::<Slim>(r#"{"count":4294967296}"#);
    err::<Slim>(r#"{"name":1}"#);
    err::<Slim>(r#"{"name":"a",}"#);
    err::<Slim>(r#"{"name":"a" "count":1}"#);
    err::<Slim>(r#"{"other":[1,],"name":"a"}"#);
    err::<Slim>(r#"{"other":tru}"#);
    err::<Slim>(r#"{"name":"a""#);
    err::<Slim>(r#"null"#);
    err::<Slim>(r#""x""#);
    err::<Slim>(r#""#);
    // From an array, in field order, as serde_json allows; extra elements are an error.
    ok::<Slim>(r#"["n", 2, [1,2], null]"#);
    err::<Slim>(r#"["n", 2, [1,2], null, 5]"#);
    ok::<Slim>(r#"["n"]"#);
    // Maps: the last of duplicate keys wins, as with serde_json.
    let m = ok::<BTreeMap<String, u8>>(r#"{"a":1,"a":2}"#);
    assert_eq!(m["a"], 2);
    ok::<HashMap<String, Value>>(r#"{"a":1,"b":[true],"a":{"c":null}}"#);
    let v = ok::<Value>(r#"{"a":1,"a":2}"#);
    assert_eq!(v["a"], 2);
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        a: Option<u8>,
    }
    ok::<Strict>(r#"{"a":1}"#);
    err::<Strict>(r#"{"a":1,"b":2}"#);
    #[derive(Debug, PartialEq, Deserialize)]
    struct Aliased {
        #[serde(alias = "b")]
        a: u8,
        #[serde(skip)]
        skipped: u8,
    }
    ok::<Aliased>(r#"{"b":1,"skipped":9}"#);
    err::<Aliased>(r#"{"b":1,"a":2}"#);
    ok::<(u8, String)>(r#"[1,"x"]"#);
    err::<(u8, String)>(r#"[1,"x",2]"#);
    err::<(u8, String)>(r#"[1]"#);
    ok::<Vec<Option<bool>>>("[true,null,false]");
    err::<Vec<bool>>("[true,]");
    err::<Vec<bool>>("[true");
}

#[test]
fn enums_in_every_representation() {
    #[derive(Debug, PartialEq, Deserialize)]
    enum External {
        Unit,
        New(u8),
        Tuple(u8, String),
        Struct { a: u8 },
    }
    for j in [
        r#""Unit""#,
        r#"{"Unit":null}"#,
        r#"{"New":1}"#,
        r#""New""#,
        r#"{"Tuple":[1,"x"]}"#,
        r#"{"Struct":{"a":1}}"#,
        r#"{"Struct":[1]}"#,
        r#"{"Nope":1}"#,
        r#"{"New":1,"Unit":null}"#,
        r#"{"New":1"#,
        r#"{1:1}"#,
        r#"{}"#,
        r#"1"#,
        r#""Tuple""#,
        r#""Struct""#,
    ] {
        same::<External>(j);
        same::<Vec<External>>(&format!("[{j}]"));
        same::<BTreeMap<String, External>>(&format!(r#"{{"k":{j}}}"#));
    }
    #[derive(Debug, PartialEq, Deserialize, PartialOrd, Ord, Eq)]
    enum KeyEnum {
        A,
        B,
    }
    ok::<BTreeMap<KeyEnum, u8>>(r#"{"A":1,"B":2}"#);
    err::<BTreeMap<KeyEnum, u8>>(r#"{"C":1}"#);

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "type")]
    enum Internal {
        A { x: u8 },
        B,
    }
    ok::<Internal>(r#"{"x":1,"type":"A"}"#);
    ok::<Internal>(r#"{"type":"B","extra":[1]}"#);
    err::<Internal>(r#"{"x":1}"#);
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "t", content = "c")]
    enum Adjacent {
        A(u8),
        B,
    }
    ok::<Adjacent>(r#"{"c":1,"t":"A"}"#);
    ok::<Adjacent>(r#"{"t":"B"}"#);
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Untagged {
        Num(u64),
        Neg(i64),
        Float(f64),
        Text(String),
        List(Vec<Untagged>),
        Obj { a: Box<Untagged> },
    }
    for j in [
        "1",
        "-1",
        "1.5",
        r#""s""#,
        r#""\u00e9""#,
        "[1,[\"x\"]]",
        r#"{"a":{"a":2}}"#,
        "null",
        "true",
        r#"{"b":1}"#,
        "18446744073709551616",
    ] {
        same::<Untagged>(j);
    }
}

#[test]
fn flatten_buffers_through_deserialize_any() {
    #[derive(Debug, PartialEq, Deserialize)]
    struct Flat {
        name: String,
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
    }
    ok::<Flat>(r#"{"a":[1,{"b":"\u00e9"}],"name":"x","c":1.25,"d":18446744073709551615}"#);
    err::<Flat>(r#"{"a":1}"#);
    #[derive(Debug, PartialEq, Deserialize)]
    struct FlatSlim {
        #[serde(flatten)]
        slim: Slim,
        extra: Option<bool>,
    }
    ok::<FlatSlim>(r#"{"name":"n","extra":true,"items":[1,2]}"#);
    err::<FlatSlim>(r#"{"name":"n","extra":1}"#);
}

#[test]
fn map_keys_as_serde_json_reads_them() {
    ok::<BTreeMap<u32, u8>>(r#"{"1":1,"20":2}"#);
    ok::<BTreeMap<i64, u8>>(r#"{"-5":1}"#);
    ok::<BTreeMap<i128, u8>>(r#"{"-170141183460469231731687303715884105728":1}"#);
    ok::<HashMap<bool, u8>>(r#"{"true":1,"false":0}"#);
    for bad in [
        r#"{" 1":1}"#,
        r#"{"1 ":1}"#,
        r#"{"":1}"#,
        r#"{"x":1}"#,
        r#"{"1x":1}"#,
        r#"{"1\u0030":1}"#,
        r#"{"300":1}"#,
        r#"{"1.5":1}"#,
    ] {
        err::<BTreeMap<u8, u8>>(bad);
    }
    err::<HashMap<bool, u8>>(r#"{"True":1}"#);
    err::<HashMap<bool, u8>>(r#"{"truex":1}"#);
    ok::<BTreeMap<String, u8>>(r#"{"a\"b":1,"\u00e9":2}"#);
    err::<BTreeMap<String, u8>>(r#"{"\ud800":1}"#);
    ok::<BTreeMap<char, u8>>(r#"{"a":1}"#);
    err::<BTreeMap<char, u8>>(r#"{"ab":1}"#);
    #[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
    struct Newtype(String);
    ok::<BTreeMap<Newtype, u8>>(r#"{"k":1}"#);
    ok::<BTreeMap<Option<String>, u8>>(r#"{"k":1}"#);
}

#[test]
fn raw_values_are_slices_of_the_input() {
    #[derive(Debug, Deserialize)]
    struct WithRaw {
        a: Box<RawValue>,
        b: Option<RawJson>,
    }
    let json = r#"{"a": {"x": [1, 2]} , "b": [ "y" ], "c": 1}"#;
    let theirs: WithRaw = serde_json::from_str(json).unwrap();
    let ours: WithRaw = from_str(json).unwrap();
    assert_eq!(theirs.a.get(), ours.a.get());
    assert_eq!(ours.a.get(), r#"{"x": [1, 2]}"#);
    assert_eq!(theirs.b, ours.b);
    #[derive(Debug, Deserialize)]
    struct Borrowed<'a> {
        #[serde(borrow)]
        a: &'a RawValue,
    }
    let b: Borrowed = from_str(json).unwrap();
    assert_eq!(b.a.get(), r#"{"x": [1, 2]}"#);
    for bad in [r#"{"a": [1,]}"#, r#"{"a": }"#, r#"{"a": {"x" 1}}"#] {
        assert!(serde_json::from_str::<WithRaw>(bad).is_err());
        assert!(from_str::<WithRaw>(bad).is_err(), "{bad}");
    }
}

#[test]
fn object_meta_decodes_as_serde_json_decodes_it() {
    let text = r#"{"name":"web-1","generateName":"web-","namespace":"shop","selfLink":null,
        "uid":"0f3c","resourceVersion":"42","generation":3,"creationTimestamp":"2026-11-20T10:00:00Z",
        "deletionTimestamp":null,"deletionGracePeriodSeconds":30,
        "labels":{"app":"web","a\"b":"c\u00e9"},"annotations":null,
        "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"u","controller":true}],
        "finalizers":["x/y"],"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}],
        "unknown":{"nested":[1,2,{"x":null}]}}"#;
    let theirs: ObjectMeta = serde_json::from_str(text).unwrap();
    let ours: ObjectMeta = from_str(text).unwrap();
    assert_eq!(
        serde_json::to_string(&theirs).unwrap(),
        serde_json::to_string(&ours).unwrap()
    );
    for bad in [
        r#"{"labels":{"a":null}}"#,
        r#"{"name":"a","name":"b"}"#,
        r#"{"managedFields":[1,]}"#,
        r#"{"generation":1.5}"#,
    ] {
        assert!(serde_json::from_str::<ObjectMeta>(bad).is_err());
        assert!(from_str::<ObjectMeta>(bad).is_err(), "{bad}");
    }
}

#[test]
fn object_meta_reads_the_same_from_every_decoder() {
    let text = r#"{"metadata":{"name":"a","labels":{"k":"v"},"managedFields":[{"m":1}]}}"#;
    #[derive(Deserialize)]
    struct Holder {
        metadata: ObjectMeta,
    }
    let show = |h: &Holder| serde_json::to_string(&h.metadata).unwrap();
    let ours: Holder = from_str(text).unwrap();
    let expected = show(&ours);
    let theirs: Holder = serde_json::from_str(text).unwrap();
    assert_eq!(show(&theirs), expected);
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        show(&serde_json::from_value::<Holder>(value).unwrap()),
        expected
    );
    // (RawJson, so managedFields, has never read from YAML.)
    let yaml: Holder = serde_yaml::from_str("metadata: {name: a, labels: {k: v}}").unwrap();
    assert_eq!(
        serde_json::to_string(&yaml.metadata.name).unwrap(),
        "\"a\"",
        "yaml reads it by serde's derive"
    );
    // Buffered by serde (flatten, untagged) before it reaches ObjectMeta's impl.
    #[derive(Deserialize)]
    struct Flat {
        #[serde(flatten)]
        holder: Holder,
    }
    // (A raw value cannot come out of serde's buffer, with serde_json either.)
    assert!(serde_json::from_str::<Flat>(text).is_err());
    assert!(from_str::<Flat>(text).is_err());
    let text = r#"{"metadata":{"name":"a","labels":{"k":"v"},"finalizers":["f"]}}"#;
    let expected = show(&serde_json::from_str::<Holder>(text).unwrap());
    let flat: Flat = from_str(text).unwrap();
    assert_eq!(show(&flat.holder), expected);
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        H(Holder),
    }
    let Either::H(h) = from_str::<Either>(text).unwrap();
    assert_eq!(show(&h), expected);
    // serde takes a struct from an array too; the scanner's path is for objects only.
    let arr = r#"{"metadata":["a",null,"ns"]}"#;
    let ours: Holder = from_str(arr).unwrap();
    let theirs: Holder = serde_json::from_str(arr).unwrap();
    assert_eq!(show(&ours), show(&theirs));
    assert_eq!(ours.metadata.namespace.as_deref(), Some("ns"));
    // Nothing is left behind on the thread for another decoder to pick up.
    assert!(from_str::<()>("{}").is_err());
    let theirs: Holder = serde_json::from_str(r#"{"metadata":{}}"#).unwrap();
    assert!(theirs.metadata.name.is_none());
}

#[test]
fn recursion_limit_is_serde_json_s() {
    for depth in [1, 100, 126, 127, 128, 129, 300] {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        same::<Value>(&text);
        let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        same::<Value>(&objects);
        same::<serde::de::IgnoredAny>(&objects)
            .map(|_| ())
            .unwrap_or(());
        let nested = format!("{}null{}", r#"{"inner":"#.repeat(depth), "}".repeat(depth));
        same::<Slim>(&nested);
        // Skipped values have no limit, in either.
        same::<IgnoredWrap>(&format!("[{text}]"));
        same::<Slim>(&format!(r#"{{"skipped":{text}}}"#));
    }
}

#[test]
fn a_prefix_leaves_what_follows() {
    let (slim, used): (Slim, usize) = from_prefix(r#" {"name":"a"} ,{"x":1}]"#).unwrap();
    assert_eq!(slim.name.as_deref(), Some("a"));
    assert_eq!(used, 13);
}

#[test]
fn recorded_container_ends_are_jumped_and_give_the_same_result() {
    use crate::json::known_ends::{with_known_ends, KnownEnds};
    let page: &'static str = Box::leak(
        r#"{"items":[{"metadata":{"name":"a","managedFields":[{"manager":"kubelet","fieldsV1":{"f:status":{}}}]},
        "spec":{"containers":[{"name":"c","image":"registry.example.com/image:1"}]},"status":{"phase":"Running"}}]}"#
            .to_owned()
            .into_boxed_str(),
    );
    #[derive(Debug, Deserialize, PartialEq)]
    struct Page {
        items: Vec<Pod>,
    }
    #[derive(Debug, Deserialize, PartialEq)]
    struct Pod {
        metadata: Meta,
        status: Value,
    }
    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        name: String,
        managed_fields: RawJson,
    }
    let ends = KnownEnds::check(page).unwrap();
    let jumped: Page = with_known_ends(page, ends, || from_str(page)).unwrap();
    assert_eq!(jumped, serde_json::from_str::<Page>(page).unwrap());
}

#[test]
fn serialized_values_round_trip() {
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct All {
        a: u64,
        b: i64,
        c: f64,
        d: String,
        e: Vec<Option<bool>>,
        f: BTreeMap<String, (u8, char)>,
        g: Option<Box<All>>,
    }
    let all = All {
        a: u64::MAX,
        b: i64::MIN,
        c: 0.1 + 0.2,
        d: "q\"\\\u{7}é😀".into(),
        e: vec![Some(true), None],
        f: [("k".to_owned(), (7, 'x'))].into(),
        g: None,
    };
    let text = serde_json::to_string(&all).unwrap();
    assert_eq!(ok::<All>(&text), all);
    let pretty = serde_json::to_string_pretty(&all).unwrap();
    assert_eq!(ok::<All>(&pretty), all);
}

/// The model test: seeded random documents (valid, and damaged ones) decoded into several
/// types by both; every pair must agree.
#[test]
fn generated_documents_decode_as_serde_json_decodes_them() {
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Model {
        name: Option<String>,
        #[serde(default)]
        count: Option<i64>,
        ratio: Option<f64>,
        flag: Option<bool>,
        #[serde(default)]
        items: Vec<Value>,
        inner: Option<Box<Model>>,
        map: Option<BTreeMap<String, String>>,
        kind: Option<Kind>,
        big: Option<u64>,
    }
    #[derive(Debug, PartialEq, Deserialize)]
    enum Kind {
        A,
        B(i32),
        C { name: String },
    }
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Denying {
        name: Option<String>,
        count: Option<u8>,
    }
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Either {
        M(Box<Model>),
        V(Value),
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rng = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    /// Holds `ObjectMeta`s (the scanner's fast path), compared by their `Debug` text.
    #[derive(Debug, Deserialize)]
    struct MetaHolder {
        metadata: Option<ObjectMeta>,
        #[allow(dead_code)] // compared through Debug
        inner: Option<Vec<ObjectMeta>>,
    }
    impl PartialEq for MetaHolder {
        fn eq(&self, other: &Self) -> bool {
            format!("{self:?}") == format!("{other:?}")
        }
    }
    let mut compared = 0;
    let mut accepted = 0;
    let mut metas = 0;
    for round in 0..20_000 {
        let mut doc = String::new();
        gen_value(&mut rng, &mut doc, 0, round % 3 == 0);
        if round % 4 == 1 {
            damage(&mut rng, &mut doc);
        }
        accepted += usize::from(same::<Model>(&doc).is_some());
        same::<Value>(&doc);
        same::<Denying>(&doc);
        same::<Either>(&doc);
        same::<Vec<Model>>(&format!("[{doc}]"));
        same::<BTreeMap<String, Kind>>(&doc);
        metas += usize::from(same::<MetaHolder>(&doc).is_some_and(|m| m.metadata.is_some()));
        compared += 1;
    }
    assert!(
        accepted > 1000,
        "only {accepted} documents decoded as Model"
    );
    assert_eq!(compared, 20_000);
    assert!(metas > 100, "only {metas} documents had an ObjectMeta");
}

const NAMES: [&str; 18] = [
    "name",
    "count",
    "ratio",
    "flag",
    "items",
    "inner",
    "map",
    "kind",
    "big",
    "other",
    "A",
    "C",
    "metadata",
    "labels",
    "generation",
    "finalizers",
    "managedFields",
    "uid",
];

fn gen_value(rng: &mut impl FnMut() -> u64, out: &mut String, depth: usize, object: bool) {
    let pick = if object { 0 } else { rng() % 10 };
    match pick {
        0 | 1 if depth < 5 => {
            out.push('{');
            let n = rng() % 5;
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&ws(rng));
                let name = NAMES[(rng() % NAMES.len() as u64) as usize];
                out.push('"');
                out.push_str(name);
                out.push_str("\":");
                out.push_str(&ws(rng));
                gen_value(rng, out, depth + 1, false);
            }
            out.push('}');
        }
        2 if depth < 5 => {
            out.push('[');
            let n = rng() % 4;
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                gen_value(rng, out, depth + 1, false);
            }
            out.push(']');
        }
        3 | 4 => {
            const NUMBERS: [&str; 12] = [
                "0",
                "-1",
                "42",
                "9223372036854775807",
                "9223372036854775808",
                "18446744073709551616",
                "1.5",
                "-2.5e10",
                "1e400",
                "0.30000000000000004",
                "2147483648",
                "-0",
            ];
            out.push_str(NUMBERS[(rng() % 12) as usize]);
        }
        5 | 6 => {
            const STRINGS: [&str; 9] = [
                r#""web""#,
                r#""A""#,
                r#""B""#,
                r#""\u00e9\n""#,
                r#""\ud83d\ude00""#,
                r#""\ud800""#,
                r#""""#,
                r#""a\"b""#,
                r#""C""#,
            ];
            out.push_str(STRINGS[(rng() % 9) as usize]);
        }
        7 => out.push_str("null"),
        8 => out.push_str("true"),
        _ => out.push_str("false"),
    }
}

fn ws(rng: &mut impl FnMut() -> u64) -> String {
    [" ", "", "\n\t", ""][(rng() % 4) as usize].to_owned()
}

fn damage(rng: &mut impl FnMut() -> u64, doc: &mut String) {
    let mut bytes = doc.clone().into_bytes();
    if bytes.is_empty() {
        return;
    }
    let at = (rng() as usize) % bytes.len();
    match rng() % 3 {
        0 => bytes[at] = b"{}[],:\"0 \\xn-"[(rng() % 13) as usize],
        1 => {
            bytes.remove(at);
        }
        _ => {
            let b = bytes[at];
            bytes.insert(at, b);
        }
    }
    if let Ok(text) = String::from_utf8(bytes) {
        *doc = text;
    }
}

/// k8s-openapi's types (hand-written `Deserialize` impls: `apiVersion`/`kind` checks,
/// `IntOrString` through `deserialize_any`, `Quantity` newtypes, `Time` strings, `FieldsV1`
/// values) decode through the library's deserializer exactly as through serde_json.
#[cfg(feature = "k8s-openapi")]
#[test]
fn k8s_openapi_types_decode_as_serde_json_decodes_them() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
    let pod = include_str!("../../../benches/realistic-pod.json");
    let decoded = ok::<Pod>(pod);
    assert!(decoded.metadata.managed_fields.is_some());
    let mut broken = 0;
    for (from, to) in [
        (r#""Pod""#, r#""Service""#),
        (r#""v1""#, r#""v2""#),
        (r#""containerPort":"#, r#""containerPort":"x","y":"#),
        ("{", "["),
        ("}", "},"),
        ("\"", "\\\""),
    ] {
        let text = pod.replacen(from, to, 1);
        broken += usize::from(same::<Pod>(&text).is_none());
    }
    assert!(broken >= 4, "only {broken} damaged pods were refused");
    ok::<Service>(
        r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},
            "spec":{"ports":[{"port":80,"targetPort":"http"},{"port":81,"targetPort":8081}]}}"#,
    );
    ok::<ConfigMap>(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
            "data":{"a":"b"},"binaryData":{"k":"aGVsbG8="}}"#,
    );
    err::<ConfigMap>(r#"{"apiVersion":"v1","kind":"ConfigMap","binaryData":{"k":"!!"}}"#);
    ok::<Deployment>(
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d",
            "creationTimestamp":"2026-11-20T10:00:00Z"},"spec":{"replicas":3,"selector":{},
            "strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}},
            "template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"500m"}}}]}}}}"#,
    );
    err::<Deployment>(r#"{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1.5}}"#);
}

/// With the thread's option on, `managedFields` is skipped in every object that is a
/// `metadata` member's value (at any depth, an escaped name too), and nowhere else; the rest
/// decodes as serde_json decodes it without the member. Off, nothing changes.
#[test]
fn managed_fields_are_skipped_in_metadata_when_the_thread_strips_them() {
    let json = r#"{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:x":{}}}],"labels":{"k":"v"}},
        "spec":{"managedFields":1,"template":{"metadata":{"managed\u0046ields":[{"x":1}],"name":"t"}}},
        "other":{"metadata":null}}"#;
    let full: Value = serde_json::from_str(json).unwrap();
    let decoded = |json: &str| -> Value { from_str(json).unwrap() };
    assert_eq!(decoded(json), full, "off: as serde_json");
    let _strip = crate::json::decode_options::strip_managed_fields_on_this_thread(true);
    let mut expected = full.clone();
    expected["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    expected["spec"]["template"]["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    assert_eq!(decoded(json), expected);
    // Through our ObjectMeta (the scanner's decoder) and a struct's fields alike.
    #[derive(Deserialize)]
    struct Slim {
        metadata: ObjectMeta,
        spec: Value,
    }
    let slim: Slim = from_str(json).unwrap();
    assert!(slim.metadata.managed_fields.is_none());
    assert_eq!(slim.metadata.name.as_deref(), Some("a"));
    assert_eq!(slim.spec["managedFields"], 1);
    // A damaged `managedFields` is still checked, never trusted unread.
    assert!(from_str::<Value>(r#"{"metadata":{"managedFields":[1,]}}"#).is_err());
}

/// A `Vec` is allocated once with room for exactly its elements: the array is counted ahead
/// (serde_json gives no size hint, so its `Vec`s grow and keep the spare room).
#[test]
fn vecs_hold_no_spare_capacity() {
    #[derive(Deserialize, PartialEq, Debug)]
    struct Big {
        name: String,
        #[serde(default)]
        pad: [u64; 16],
        #[serde(default)]
        ports: Vec<u16>,
    }
    let json = r#"{"one": [{"name": "a", "ports": [1, 2, 3, 4, 5]}],
                   "five": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "e"}],
                   "none": []}"#;
    let decoded = same::<HashMap<String, Vec<Big>>>(json).unwrap();
    for (name, v) in &decoded {
        assert_eq!(v.capacity(), v.len(), "{name}");
        for b in v {
            assert_eq!(b.ports.capacity(), b.ports.len(), "{name}: ports");
        }
    }
    let theirs: HashMap<String, Vec<Big>> = serde_json::from_str(json).unwrap();
    assert!(
        theirs["one"].capacity() > 1,
        "serde_json's grow (else this test shows nothing)"
    );
    // Deeper than the hint's depth, an array still decodes (growing as serde_json's do).
    let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
    same::<Value>(&deep).unwrap();
    // Escaped strings and keys come as owned strings, equal to serde_json's.
    same::<HashMap<String, Vec<String>>>(
        r#"{"k:{\"uid\":\"0f3c\"}": ["a\nb", "\u00e9\ud83d\ude00"]}"#,
    )
    .unwrap();
}
