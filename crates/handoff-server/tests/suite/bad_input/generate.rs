//! The bad values tried on each field of a tool's arguments: wrong types, empty, control
//! characters, numeric oddities, one past `maxLength`; once per tool, text no JSON parser
//! accepts and values too big for any field.

use serde_json::{Value, json};

use super::{
    fixture::{Era, META},
    marker::Marker,
};

/// The payload length of an ordinary string case.
const PAYLOAD: usize = 4096;
/// Stands in for raw JSON text (not a value serde_json would write) until the body is built.
const RAW: &str = "\u{1}RAW\u{1}";

/// A bad value: a JSON value, or raw text that is not valid JSON at all.
#[derive(Debug, Clone)]
pub enum Bad {
    /// A value the schema rejects (checked before sending).
    Value(Value),
    /// Text no JSON parser may accept (a lone surrogate, NaN, nesting past any limit).
    Raw(String),
}

/// A tool as `tools/list` describes it.
#[derive(Debug, Clone)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// Its input schema.
    pub input: Value,
}

/// `[[[…]]]`, `depth` deep, as text (a `Value` that deep would overflow our own stack).
pub fn deep_array(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// A 100,000-element array of zeros.
fn long_array() -> Value {
    Value::Array(vec![json!(0); 100_000])
}

fn strings(marker: &Marker) -> Vec<(&'static str, Bad)> {
    let payload = marker.text(PAYLOAD);
    let v = |s: String| Bad::Value(Value::String(s));
    vec![
        ("empty", v(String::new())),
        ("blank", v(" \t".into())),
        ("control", v("\0".into())),
        ("control", v("\u{1b}[2J\u{7}\u{8}".into())),
        ("control", v("line\r\nbreak\u{2028}".into())),
        ("control", v(format!("\0{payload}"))),
        ("control", v(format!("\u{202e}\u{200b}\u{feff}{payload}"))),
        ("nan-string", v("NaN".into())),
        ("nan-string", v("-Infinity".into())),
        ("nan-string", v("1e999".into())),
        ("nan-string", v("0x10".into())),
        ("nan-string", v("\u{663}".into())),
    ]
}

fn numbers() -> Vec<(&'static str, Bad)> {
    [
        json!(-1),
        json!(0),
        json!(-0.0),
        json!(0.5),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(1e308),
        json!(-1e308),
    ]
    .into_iter()
    .map(|n| ("number", Bad::Value(n)))
    .collect()
}

/// Text no JSON parser may accept, and values too big for any field: tried on one field per
/// tool, since the parser and the body cap meet them before any field does.
fn once_per_tool(marker: &Marker) -> Vec<(&'static str, Bad)> {
    let raw = |s: &str| Bad::Raw(s.into());
    vec![
        ("surrogate", raw(r#""\ud800""#)),
        ("surrogate", raw(r#""x\udc00y""#)),
        ("number", raw("1e400")),
        ("number", raw("NaN")),
        ("number", raw("-Infinity")),
        ("number", raw("0x10")),
        ("number", raw("01")),
        ("deep-nesting", Bad::Raw(deep_array(10_000))),
        ("huge-string", Bad::Value(json!(marker.text(1 << 20)))),
        ("huge-array", Bad::Value(long_array())),
    ]
}

/// The bad values tried on one field with schema `schema`, labelled by kind; `first`: the
/// tool's first field, which also gets the once-per-tool values.
pub fn candidates(marker: &Marker, schema: &Value, first: bool) -> Vec<(&'static str, Bad)> {
    let payload = marker.text(PAYLOAD);
    let v = |n: Value| Bad::Value(n);
    let mut out = vec![
        ("wrong-type", v(json!(payload))),
        ("wrong-type", v(json!(42))),
        ("wrong-type", v(json!(1.5))),
        ("wrong-type", v(json!(true))),
        ("wrong-type", v(Value::Null)),
        ("wrong-type", v(json!([payload]))),
        ("wrong-type", v(json!({"k": payload}))),
        ("empty", v(json!([]))),
        ("empty", v(json!({}))),
    ];
    out.extend(strings(marker));
    out.extend(numbers());
    if let Some(max) = schema["maxLength"].as_u64() {
        let over = usize::try_from(max).unwrap_or(usize::MAX - 1) + 1;
        out.push(("over-max-length", v(json!(marker.text(over)))));
    }
    if first {
        out.extend(once_per_tool(marker));
    }
    out
}

/// The placeholder to put where raw text will go.
pub fn placeholder() -> Value {
    json!(RAW)
}

/// The JSON text of `args` with `raw` where the placeholder stands.
pub fn with_raw(args: &Value, raw: &str) -> String {
    args.to_string().replacen(&json!(RAW).to_string(), raw, 1)
}

/// A `tools/call` request body in `era`.
pub fn call_body(era: Era, id: u64, tool: &str, arguments: &str) -> Vec<u8> {
    let meta = match era {
        Era::Legacy => String::new(),
        Era::Stateless => format!(r#","_meta":{META}"#),
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{},"arguments":{arguments}{meta}}}}}"#,
        json!(tool)
    )
    .into_bytes()
}
