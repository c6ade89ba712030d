//! Protocol cases in both eras: bodies that are not JSON, JSON that is not JSON-RPC, batches,
//! wrong versions and ids, unknown methods, known methods with malformed params, bodies over
//! the limit.

use serde_json::json;

use super::{
    case::{Case, Expect, Send},
    fixture::{Era, Fixture, META},
    generate::deep_array,
    marker::Marker,
    raw::post_bytes,
};

const PARSE: &[i64] = &[-32700];
const INVALID: &[i64] = &[-32600];
const UNKNOWN: &[i64] = &[-32601];
const PARAMS: &[i64] = &[-32602];
const PARAMS_OR_INVALID: &[i64] = &[-32602, -32600];
/// As [`PARAMS_OR_INVALID`], or (2026-07-28) the params' `name` does not match the `Mcp-Name`
/// header the request was routed under: `-32020`, header mismatch, is as clear a refusal.
const PARAMS_INVALID_OR_MISMATCH: &[i64] = &[-32602, -32600, -32020];

/// A well-formed task id that names no task.
const NO_TASK: &str = "task_aaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Builds the protocol cases of one era.
struct Cases<'a> {
    fx: &'a Fixture,
    era: Era,
    out: Vec<Case>,
}

impl Cases<'_> {
    /// A case with `body`; `method` and `tool` go in the 2026-07-28 routing headers.
    fn add(
        &mut self,
        group: &str,
        body: impl Into<Vec<u8>>,
        route: (Option<&str>, Option<&str>),
        expect: Expect,
    ) {
        let era = self.era.name();
        let n = self.out.len();
        let body = body.into();
        let label = label(&body);
        let mut headers = self.fx.headers(self.era, route.0, route.1);
        if group == "initialize" && self.era == Era::Legacy {
            // An initialize opens a session: it never carries one.
            headers.retain(|(k, _)| k != "mcp-session-id");
        }
        self.out.push(Case {
            group: format!("{era}/protocol/{group}"),
            name: format!("{era}/protocol/{group}#{n} {label}"),
            send: Send::Post { headers, body },
            expect,
        });
    }

    /// A request id no other case of this era uses: requests in flight in one session must
    /// not share ids.
    fn id(&self) -> String {
        (1000 + self.out.len()).to_string()
    }

    /// A request with `params` (raw JSON; the era's `_meta` is added to an object).
    fn request(&self, id: &str, method: &str, params: Option<&str>) -> String {
        let params = match (self.era, params) {
            (Era::Legacy, None) => String::new(),
            (Era::Legacy, Some(p)) => format!(r#","params":{p}"#),
            (Era::Stateless, None) => format!(r#","params":{{"_meta":{META}}}"#),
            (Era::Stateless, Some(p)) => match p.strip_prefix('{') {
                Some(rest) if rest.trim_start().starts_with('}') => {
                    format!(r#","params":{{"_meta":{META}}}"#)
                }
                Some(rest) => format!(r#","params":{{"_meta":{META},{rest}"#),
                None => format!(r#","params":{p}"#),
            },
        };
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":{}{params}}}"#,
            json!(method)
        )
    }
}

/// A short readable form of a body for case names: no `_meta`, at most 60 characters.
fn label(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body).replace(&format!(r#""_meta":{META},"#), "");
    let text = text.replace(&format!(r#""_meta":{META}"#), "");
    let text = match text.strip_prefix(r#"{"jsonrpc":"2.0","id":"#) {
        Some(rest) => rest.split_once(',').map_or(rest, |(_, after)| after),
        None => &text,
    };
    let short: String = text.chars().take(60).collect();
    format!("`{}`", short.escape_debug())
}

/// Every protocol case of `era`.
pub fn cases(fx: &Fixture, marker: &Marker, era: Era) -> Vec<Case> {
    let mut c = Cases {
        fx,
        era,
        out: Vec::new(),
    };
    not_json(&mut c, marker);
    not_json_rpc(&mut c);
    unknown_methods(&mut c, marker);
    malformed_params(&mut c, marker);
    malformed_other_params(&mut c, marker);
    malformed_initialize(&mut c, marker);
    over_the_limit(&mut c, marker);
    c.out
}

fn not_json(c: &mut Cases, marker: &Marker) {
    let payload = marker.text(4096);
    let ping = (Some("ping"), None);
    let bodies: Vec<Vec<u8>> = vec![
        b"{".to_vec(),
        b"not json".to_vec(),
        br#"{"jsonrpc": "2.0", "id": 1,"#.to_vec(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}} {payload}"#).into_bytes(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{payload}"#).into_bytes(),
        br#""\ud800""#.to_vec(),
        br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\udc00"}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":NaN,"method":"ping"}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#.to_vec(),
        br#"{'jsonrpc':'2.0','id':1,'method':'ping'}"#.to_vec(),
        br#"{"jsonrpc":"2.0",/* c */"id":1,"method":"ping"}"#.to_vec(),
        b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\xff\xfe\"}".to_vec(),
        deep_array(10_000).into_bytes(),
        format!("{}{}", r#"{"a":"#.repeat(10_000), "}".repeat(10_000)).into_bytes(),
    ];
    for body in bodies {
        c.add("invalid-json", body, ping, Expect::codes(PARSE));
    }
    for body in ["", "   "] {
        c.add("empty-body", body, ping, Expect::codes(&[-32700, -32600]));
    }
}

fn not_json_rpc(c: &mut Cases) {
    let route = (Some("ping"), None);
    let ping = c.request(&c.id(), "ping", None);
    let shapes: Vec<(&str, String)> = vec![
        ("not-json-rpc", "{}".into()),
        ("not-json-rpc", r#"{"a":1}"#.into()),
        ("not-json-rpc", "42".into()),
        ("not-json-rpc", r#""ping""#.into()),
        ("not-json-rpc", "null".into()),
        ("not-json-rpc", "true".into()),
        ("not-json-rpc", r#"{"jsonrpc":"2.0"}"#.into()),
        ("not-json-rpc", r#"{"jsonrpc":"2.0","id":1}"#.into()),
        (
            "not-json-rpc",
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#.into(),
        ),
        (
            "not-json-rpc",
            r#"{"jsonrpc":"2.0","id":1,"method":null}"#.into(),
        ),
        (
            "not-json-rpc",
            r#"{"jsonrpc":"2.0","id":1,"method":["ping"]}"#.into(),
        ),
        (
            "not-json-rpc",
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#.into(),
        ),
        ("batch", "[]".into()),
        ("batch", format!("[{ping}]")),
        ("batch", format!("[{ping},{ping}]")),
        ("batch", "[[]]".into()),
        ("batch", "[{}]".into()),
        ("batch", "[1]".into()),
    ];
    for (group, body) in shapes {
        c.add(group, body, route, Expect::codes(INVALID));
    }
    // A batch is refused whole; its first member that is no message either is named.
    let members = [
        r#"{"jsonrpc":"2.0","id":2}"#,
        r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#,
        r#"{"id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":5}"#,
        r#"{"jsonrpc":"2.0"}"#,
        "1",
        r#""ping""#,
    ];
    for member in members {
        let body = format!("[{ping},{member}]");
        c.add(
            "batch-member",
            body,
            route,
            Expect::codes(INVALID).naming("member 1"),
        );
    }
    // No `method`, and no response either: `method` is what is missing.
    for body in [
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"2.0","id":"x","params":{}}"#,
        r#"{"jsonrpc":"2.0"}"#,
    ] {
        c.add(
            "no-method",
            body,
            route,
            Expect::codes(INVALID).naming("`method`"),
        );
    }
    let versions = [r#""1.0""#, r#""2""#, "2.0", "null", r#""2.0 ""#, r#""""#];
    for version in versions {
        let ping = c.request(&c.id(), "ping", None);
        let body = ping.replacen(r#""jsonrpc":"2.0""#, &format!(r#""jsonrpc":{version}"#), 1);
        c.add("wrong-version", body, route, Expect::codes(INVALID));
    }
    let ping = c.request(&c.id(), "ping", None);
    let without = ping.replacen(r#""jsonrpc":"2.0","#, "", 1);
    c.add("wrong-version", without, route, Expect::codes(INVALID));
    for id in [
        "{}",
        "[]",
        "true",
        "1.5",
        "null",
        r#"{"a":1}"#,
        "18446744073709551616",
    ] {
        let body = c.request(id, "ping", None);
        c.add("wrong-id", body, route, Expect::codes(INVALID));
    }
}

fn unknown_methods(c: &mut Cases, marker: &Marker) {
    let payload = marker.text(4096);
    for method in [
        "nope",
        "tools/nope",
        "",
        "rpc.discover",
        "TOOLS/LIST",
        "tools/List",
        payload.as_str(),
    ] {
        let body = c.request(&c.id(), method, Some("{}"));
        c.add(
            "unknown-method",
            body,
            (Some(method), None),
            Expect::codes(UNKNOWN),
        );
    }
}

/// `tools/call` with params of the wrong shape.
fn malformed_params(c: &mut Cases, marker: &Marker) {
    let payload = json!(marker.text(4096)).to_string();
    let call = (Some("tools/call"), Some("ping"));
    let calls: Vec<(String, Option<&'static str>)> = vec![
        ("[]".into(), None),
        (r#""x""#.into(), None),
        ("5".into(), None),
        ("{}".into(), Some("name")),
        (r#"{"name":5}"#.into(), Some("name")),
        (r#"{"name":null}"#.into(), Some("name")),
        (format!(r#"{{"name":{payload}}}"#), None),
        (
            r#"{"name":"ping","arguments":[]}"#.into(),
            Some("arguments"),
        ),
        (
            r#"{"name":"ping","arguments":"x"}"#.into(),
            Some("arguments"),
        ),
        (
            format!(r#"{{"name":"ping","arguments":{payload}}}"#),
            Some("arguments"),
        ),
        (r#"{"name":"ping","arguments":5}"#.into(), Some("arguments")),
    ];
    for (params, field) in calls {
        let body = c.request(&c.id(), "tools/call", Some(&params));
        let expect = match field {
            Some(field) => Expect::codes(PARAMS).naming(field),
            None => Expect::codes(PARAMS_INVALID_OR_MISMATCH),
        };
        c.add("malformed-params", body, call, expect);
    }
    // An unknown tool whose name is the payload, routed under that name.
    let name = marker.text(4096);
    let body = c.request(
        &c.id(),
        "tools/call",
        Some(&format!(r#"{{"name":{payload}}}"#)),
    );
    let route = (Some("tools/call"), Some(name.as_str()));
    c.add("unknown-tool", body, route, Expect::codes(PARAMS));
}

/// The other methods with params of the wrong shape.
fn malformed_other_params(c: &mut Cases, marker: &Marker) {
    let payload = json!(marker.text(4096)).to_string();
    let tasks: Vec<(&str, String, Option<&'static str>)> = vec![
        ("tasks/get", r#"{"taskId":5}"#.into(), Some("taskId")),
        ("tasks/get", "{}".into(), Some("taskId")),
        ("tasks/get", r#"{"taskId":null}"#.into(), Some("taskId")),
        ("tasks/get", format!(r#"{{"taskId":{payload}}}"#), None),
        ("tasks/cancel", r#"{"taskId":5}"#.into(), Some("taskId")),
        ("tasks/cancel", r#"{"taskId":[]}"#.into(), Some("taskId")),
        (
            "tasks/update",
            format!(r#"{{"taskId":"{NO_TASK}"}}"#),
            Some("inputResponses"),
        ),
        (
            "tasks/update",
            format!(r#"{{"taskId":"{NO_TASK}","inputResponses":[]}}"#),
            Some("inputResponses"),
        ),
        (
            "tasks/update",
            format!(r#"{{"taskId":"{NO_TASK}","inputResponses":"x"}}"#),
            Some("inputResponses"),
        ),
        (
            "tasks/update",
            format!(r#"{{"taskId":"{NO_TASK}","inputResponses":{{"k":{payload}}}}}"#),
            None,
        ),
        (
            "tasks/update",
            r#"{"inputResponses":{}}"#.into(),
            Some("taskId"),
        ),
        ("tools/list", r#"{"cursor":5}"#.into(), Some("cursor")),
        ("tools/list", r#"{"cursor":{}}"#.into(), Some("cursor")),
        ("ping", "[]".into(), None),
        ("ping", r#""x""#.into(), None),
    ];
    for (method, params, field) in tasks {
        let body = c.request(&c.id(), method, Some(&params));
        let expect = match field {
            Some(field) => Expect::codes(PARAMS).naming(field),
            // Well-formed but naming nothing that exists: any clear error.
            None => Expect::any(),
        };
        let name = if method == "tasks/get" || method == "tasks/cancel" || method == "tasks/update"
        {
            Some(NO_TASK)
        } else {
            None
        };
        c.add("malformed-params", body, (Some(method), name), expect);
    }
}

fn malformed_initialize(c: &mut Cases, marker: &Marker) {
    let payload = json!(marker.text(4096)).to_string();
    let info = r#""clientInfo":{"name":"bad-input","version":"1"}"#;
    let inits: Vec<(Option<String>, Option<&'static str>)> = vec![
        (None, Some("params")),
        (Some("{}".into()), Some("protocolVersion")),
        (Some("[]".into()), Some("params")),
        (
            Some(format!(
                r#"{{"protocolVersion":5,"capabilities":{{}},{info}}}"#
            )),
            Some("protocolVersion"),
        ),
        (
            Some(format!(
                r#"{{"protocolVersion":"2025-06-18","capabilities":[],{info}}}"#
            )),
            Some("capabilities"),
        ),
        (
            Some(r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":"x"}"#.into()),
            Some("clientInfo"),
        ),
        (
            Some(r#"{"protocolVersion":"2025-06-18","capabilities":{}}"#.into()),
            Some("clientInfo"),
        ),
        (
            Some(format!(
                r#"{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{payload}}}"#
            )),
            Some("clientInfo"),
        ),
    ];
    for (params, field) in inits {
        let body = c.request(&c.id(), "initialize", params.as_deref());
        let expect = match (c.era, field) {
            (Era::Legacy, Some(field)) => Expect::codes(PARAMS_OR_INVALID).naming(field),
            // 2026-07-28 has no initialize: any clear refusal.
            _ => Expect::any(),
        };
        c.add("initialize", body, (Some("initialize"), None), expect);
    }
}

fn over_the_limit(c: &mut Cases, marker: &Marker) {
    // The default cap is 4 MiB; one byte and one mebibyte over it.
    for size in [(4 << 20) + 1, 5 << 20] {
        let filler = marker.text(size);
        let args = format!(r#"{{"message":"{filler}"}}"#);
        let body = c.request(
            &c.id(),
            "tools/call",
            Some(&format!(r#"{{"name":"ping","arguments":{args}}}"#)),
        );
        c.add(
            "over-the-limit",
            body,
            (Some("tools/call"), Some("ping")),
            Expect::codes(INVALID),
        );
        // An HTTP client gives up on the answer when the server refuses before taking the
        // whole body; the raw exchange reads the answer while it is still writing.
        let last = c.out.last_mut().expect("just added");
        if let Send::Post { headers, body } = &last.send {
            last.send = Send::Raw(post_bytes(c.fx.addr, headers, body));
        }
    }
}
