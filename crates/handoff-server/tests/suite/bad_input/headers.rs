//! Header cases in both eras, written by hand on a socket: conflicting duplicates of Host,
//! Origin, x-agent-id and Authorization, hosts that only look allowed, bad Content-Type and
//! Accept, NUL in a header, oversized heads and URIs, conflicting lengths, bad MCP headers.
//! The body is always a valid ping: only the header is at fault.

use super::{
    case::{Case, Expect, Send},
    fixture::{Era, Fixture, GATEWAY, OPERATOR},
    generate::call_body,
    marker::Marker,
};

/// The arguments of the valid ping every header case carries.
const PING: &str = r#"{"message":"header case"}"#;

/// A request before it is written out.
#[derive(Clone)]
struct Req {
    method: &'static str,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Write `content-length` from the body (off when a case writes its own).
    auto_length: bool,
}

impl Req {
    fn set(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.into(), value.into()));
        self
    }

    fn add(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn remove(mut self, name: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self
    }

    /// Both values, in this order, under one name.
    fn twice(self, name: &str, first: &str, second: &str) -> Self {
        self.remove(name).add(name, first).add(name, second)
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target).into_bytes();
        for (k, v) in &self.headers {
            out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        if self.auto_length {
            out.extend_from_slice(format!("content-length: {}\r\n", self.body.len()).as_bytes());
        }
        out.extend_from_slice(b"connection: close\r\n\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// Every header case of `era`.
pub fn cases(fx: &Fixture, marker: &Marker, era: Era) -> Vec<Case> {
    let host = fx.addr.to_string();
    let mut headers = vec![("host".to_owned(), host.clone())];
    headers.extend(fx.headers(era, Some("tools/call"), Some("ping")));
    let base = Req {
        method: "POST",
        target: "/mcp".into(),
        headers,
        body: call_body(era, 2000, "ping", PING),
        auto_length: true,
    };
    let mut all = identity(&base, &host, marker);
    all.extend(content(&base, marker));
    all.extend(framing(&base));
    all.extend(mcp(&base, era, marker));
    let name = era.name();
    all.into_iter()
        .enumerate()
        .map(|(i, (group, mut req))| {
            // Requests in flight in one session must not share ids (same width: same length).
            if req.body == base.body {
                req.body = call_body(era, 2000 + i as u64, "ping", PING);
            }
            (i, group, req)
        })
        .map(|(i, group, req)| Case {
            group: format!("{name}/headers/{group}"),
            name: format!("{name}/headers/{group}#{i} {}", describe(&base, &req)),
            send: Send::Raw(req.bytes()),
            expect: Expect::any(),
        })
        .collect()
}

/// What a case changed from the base request, briefly (`+host: evil.example -accept`).
fn describe(base: &Req, req: &Req) -> String {
    let short = |v: &str| -> String {
        let cut: String = v.chars().take(40).collect();
        let more = if cut.len() < v.len() { "…" } else { "" };
        format!("{}{more}", cut.escape_debug())
    };
    let mut parts = Vec::new();
    if req.method != base.method || req.target != base.target {
        parts.push(format!("{} {}", req.method, short(&req.target)));
    }
    for (k, v) in &req.headers {
        let repeated = req.headers.iter().filter(|(n, _)| n == k).count() > 1;
        if repeated || !base.headers.contains(&(k.clone(), v.clone())) {
            parts.push(format!("+{k}: {}", short(v)));
        }
    }
    for (k, _) in &base.headers {
        if !req.headers.iter().any(|(n, _)| n == k) {
            parts.push(format!("-{k}"));
        }
    }
    if req.headers.len() > 40 {
        parts = vec![format!("{} headers", req.headers.len())];
    }
    parts.join(" ")
}

/// Who is calling and from where: Host, Origin, x-agent-id, Authorization.
fn identity(base: &Req, host: &str, marker: &Marker) -> Vec<(&'static str, Req)> {
    let payload = marker.text(4096);
    let port = host.rsplit(':').next().unwrap_or_default();
    let localhost = format!("localhost:{port}");
    let local_origin = format!("http://localhost:{port}");
    let wrong = "Bearer not-a-token-of-this-server";
    let gateway = format!("Bearer {GATEWAY}");
    let operator = format!("Bearer {OPERATOR}");
    let b = || base.clone();
    vec![
        ("host", b().twice("host", host, "evil.example")),
        ("host", b().twice("host", "evil.example", host)),
        ("host", b().twice("host", host, &localhost)),
        ("host", b().set("host", "[::1]evil.example")),
        (
            "host",
            b().set("host", &format!("[::1]:{port}evil.example")),
        ),
        ("host", b().set("host", &format!("{host}@evil.example"))),
        ("host", b().set("host", &format!("{host}, evil.example"))),
        ("host", b().set("host", "127.0.0.1:99999")),
        ("host", b().set("host", "evil.example")),
        ("host", b().set("host", "")),
        ("host", b().set("host", &payload)),
        ("host", b().remove("host")),
        (
            "origin",
            b().twice("origin", &local_origin, "http://evil.example"),
        ),
        (
            "origin",
            b().twice("origin", "http://evil.example", &local_origin),
        ),
        ("origin", b().set("origin", "null")),
        ("origin", b().set("origin", &format!("http://{payload}"))),
        ("x-agent-id", b().twice("x-agent-id", "agent-a", "agent-b")),
        ("x-agent-id", b().twice("x-agent-id", "agent-b", "agent-a")),
        ("x-agent-id", b().set("x-agent-id", "agent-a, agent-b")),
        ("x-agent-id", b().set("x-agent-id", "")),
        ("x-agent-id", b().set("x-agent-id", &payload)),
        ("x-agent-id", b().set("x-agent-id", "../../etc")),
        ("authorization", b().twice("authorization", &gateway, wrong)),
        ("authorization", b().twice("authorization", wrong, &gateway)),
        (
            "authorization",
            b().twice("authorization", &gateway, &operator),
        ),
        ("authorization", b().set("authorization", "Bearer ")),
        (
            "authorization",
            b().set("authorization", &format!("Basic {GATEWAY}")),
        ),
        (
            "authorization",
            b().set("authorization", &format!("{gateway} extra")),
        ),
        (
            "authorization",
            b().set("authorization", &format!("Bearer {payload}")),
        ),
        ("authorization", b().remove("authorization")),
    ]
}

/// What the body is said to be and what the client takes back.
fn content(base: &Req, marker: &Marker) -> Vec<(&'static str, Req)> {
    let payload = marker.text(4096);
    let b = || base.clone();
    let mut out: Vec<(&'static str, Req)> = [
        "text/plain",
        "application/xml",
        "multipart/form-data; boundary=x",
        "application/json-seq",
        "",
    ]
    .into_iter()
    .map(|t| ("content-type", b().set("content-type", t)))
    .collect();
    out.push((
        "content-type",
        b().set("content-type", &format!("text/{payload}")),
    ));
    out.push(("content-type", b().remove("content-type")));
    out.push(("accept", b().set("accept", "text/html")));
    out.push(("accept", b().remove("accept")));
    out
}

/// The message's framing: NUL bytes, oversized heads, lengths that disagree.
fn framing(base: &Req) -> Vec<(&'static str, Req)> {
    let b = || base.clone();
    let mut many = b();
    for i in 0..200 {
        many = many.add(&format!("x-filler-{i}"), "x");
    }
    let mut long_uri = b();
    long_uri.target = format!("/mcp?pad={}", "a".repeat(70 * 1024));
    let mut bad_length = b();
    bad_length.auto_length = false;
    let length = base.body.len().to_string();
    vec![
        ("nul", b().set("x-agent-id", "agent\0a")),
        (
            "nul",
            b().set("authorization", &format!("Bearer {GATEWAY}\0")),
        ),
        ("nul", b().add("x-custom", "a\0b")),
        ("nul", b().set("host", "127.0.0.1\0evil.example")),
        ("oversized", b().add("x-big", &"b".repeat(1 << 20))),
        ("oversized", many),
        ("oversized", long_uri),
        ("length", bad_length.clone().set("content-length", "abc")),
        ("length", bad_length.clone().set("content-length", "-1")),
        (
            "length",
            bad_length.clone().twice("content-length", &length, "7"),
        ),
        (
            "length",
            bad_length
                .set("content-length", &length)
                .add("transfer-encoding", "chunked"),
        ),
        ("method", {
            let mut put = b();
            put.method = "PUT";
            put
        }),
    ]
}

/// The MCP headers: versions, routing headers that disagree with the body, sessions.
fn mcp(base: &Req, era: Era, marker: &Marker) -> Vec<(&'static str, Req)> {
    let b = || base.clone();
    let mut out = vec![
        (
            "mcp-protocol-version",
            b().set("mcp-protocol-version", "1999-01-01"),
        ),
        ("mcp-protocol-version", b().set("mcp-protocol-version", "")),
    ];
    match era {
        Era::Stateless => {
            out.push(("mcp-method", b().set("mcp-method", "tools/list")));
            out.push(("mcp-method", b().remove("mcp-method")));
            out.push(("mcp-name", b().set("mcp-name", "health")));
            out.push(("mcp-name", b().set("mcp-name", &marker.text(4096))));
        }
        Era::Legacy => {
            out.push((
                "mcp-session-id",
                b().set("mcp-session-id", "no-such-session"),
            ));
            out.push((
                "mcp-session-id",
                b().set("mcp-session-id", &marker.text(8192)),
            ));
            out.push(("mcp-session-id", b().remove("mcp-session-id")));
        }
    }
    out
}
