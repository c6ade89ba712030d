//! Which requests are plain enough to answer before rmcp: headers and `_meta` that rmcp would
//! take as they are, in each era. Every check here only narrows: a request it refuses goes on
//! to rmcp, which accepts or refuses it as always.

use http::{HeaderMap, HeaderName, header};
use rmcp::model::{ClientRequest, GetMeta, ProtocolVersion, RequestMetaObject};

use crate::headers::{
    METHOD as METHOD_HEADER, NAME as NAME_HEADER, PROTOCOL_VERSION as VERSION_HEADER,
    SESSION_ID as SESSION_HEADER,
};

/// Headers that mirror tool arguments (SEP-2243); rmcp checks them against the schema.
const PARAM_HEADER_PREFIX: &str = "mcp-param-";
/// The `_meta` keys by which a request negotiates its own revision (the stateless era).
const PER_REQUEST_META: &str = "io.modelcontextprotocol/";

/// The era a request is served in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Era {
    /// A legacy session whose handshake is complete.
    Session(String),
    /// 2026-07-28: each request carries its revision, capabilities and standard headers.
    Stateless,
}

impl Era {
    /// Whether answers take the 2026-07-28 shape.
    pub(super) fn is_modern(&self) -> bool {
        *self == Era::Stateless
    }
}

/// The era of a POST whose headers are plain for it; `ready` gives the revision a session
/// negotiated, once its handshake is complete. `None`: rmcp's to handle.
pub(super) fn era_of(headers: &HeaderMap, ready: impl Fn(&str) -> Option<String>) -> Option<Era> {
    if !accepts_json_and_sse(headers) || !is_json(headers) {
        return None;
    }
    let version = single(headers, VERSION_HEADER);
    if headers.contains_key(SESSION_HEADER) {
        let session = single(headers, SESSION_HEADER)?;
        let protocol = ready(session)?;
        let fits = protocol.as_str() < ProtocolVersion::V_2026_07_28.as_str()
            && headers
                .get(VERSION_HEADER)
                .is_none_or(|_| version == Some(&*protocol));
        return fits.then(|| Era::Session(session.to_owned()));
    }
    let plain = version == Some(ProtocolVersion::V_2026_07_28.as_str())
        && !headers
            .keys()
            .any(|name| name.as_str().starts_with(PARAM_HEADER_PREFIX));
    plain.then_some(Era::Stateless)
}

/// Whether a request's `_meta` and standard headers are plain for `era`: no progress token
/// anywhere; in a session no per-request negotiation; stateless, a complete 2026-07-28
/// `_meta` and `Mcp-Method` (and for a call `Mcp-Name`) naming exactly what the body does.
pub(super) fn request_fits(era: &Era, headers: &HeaderMap, request: &ClientRequest) -> bool {
    let meta = request.get_meta();
    if meta.get_progress_token().is_some() {
        return false;
    }
    match era {
        Era::Session(_) => !meta.keys().any(|key| key.starts_with(PER_REQUEST_META)),
        Era::Stateless => {
            let name = match request {
                ClientRequest::CallToolRequest(call) => Some(call.params.name.as_ref()),
                _ => None,
            };
            negotiates_2026(meta)
                && single(headers, METHOD_HEADER) == Some(request.method())
                && single(headers, NAME_HEADER) == name
        }
    }
}

fn negotiates_2026(meta: &RequestMetaObject) -> bool {
    let version = ProtocolVersion::V_2026_07_28;
    meta.protocol_version().as_ref() == Some(&version)
        && meta.missing_required_keys(&version).is_empty()
}

/// The one value of a header, as text; `None` when absent, repeated or not text.
fn single(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

/// Whether the Accept header names both media types a POST must accept, plainly (no
/// weights: rmcp weighs those).
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(text) = value.to_str() else {
            return false;
        };
        for item in text.split(',') {
            let (essence, params) = item.split_once(';').unwrap_or((item, ""));
            if !params.trim().is_empty() {
                return false;
            }
            let essence = essence.trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use rmcp::model::ClientJsonRpcMessage;
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    const PLAIN: [(&str, &str); 2] = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut all = PLAIN.to_vec();
        all.extend_from_slice(extra);
        headers(&all)
    }

    #[test]
    fn only_a_plain_accept_of_both_types_is_taken() {
        let accept = |v| accepts_json_and_sse(&headers(&[("accept", v)]));
        assert!(accept("application/json, text/event-stream"));
        assert!(accept("text/event-stream,APPLICATION/JSON"));
        assert!(!accept("application/json"), "SSE missing");
        assert!(
            !accept("application/json;q=1, text/event-stream;q=0"),
            "weights"
        );
        assert!(!accept("*/*"), "rmcp decides wildcards");
        assert!(is_json(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
    }

    #[test]
    fn a_session_is_served_once_ready_and_on_its_own_revision() {
        let ready = |id: &str| (id == "s1").then(|| "2025-06-18".to_owned());
        let era = |extra| era_of(&with(extra), ready);
        let session = Some(Era::Session("s1".into()));
        assert_eq!(era(&[("mcp-session-id", "s1")]), session);
        let named = [
            ("mcp-session-id", "s1"),
            ("mcp-protocol-version", "2025-06-18"),
        ];
        assert_eq!(era(&named), session);
        let other = [
            ("mcp-session-id", "s1"),
            ("mcp-protocol-version", "2025-03-26"),
        ];
        assert_eq!(era(&other), None, "another revision than negotiated");
        assert_eq!(era(&[("mcp-session-id", "s2")]), None, "not ready");
        assert_eq!(era(&[]), None, "no session, no 2026 header");
    }

    fn request(body: serde_json::Value) -> ClientRequest {
        match serde_json::from_value(body).unwrap() {
            ClientJsonRpcMessage::Request(request) => request.request,
            other => panic!("not a request: {other:?}"),
        }
    }

    #[test]
    fn a_stateless_call_is_served_only_with_its_whole_2026_meta_and_matching_headers() {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
        });
        let call = |meta: serde_json::Value| {
            request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "ping", "arguments": {}, "_meta": meta}}))
        };
        let base = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "ping"),
        ];
        let no_session = |_: &str| None;
        assert_eq!(era_of(&with(&base), no_session), Some(Era::Stateless));
        let fits = |extra: &[(&'static str, &'static str)], meta| {
            request_fits(&Era::Stateless, &with(extra), &call(meta))
        };
        assert!(fits(&base, meta.clone()));
        let wrong_name = [base[0], base[1], ("mcp-name", "health")];
        assert!(!fits(&wrong_name, meta.clone()), "Mcp-Name differs");
        assert!(!fits(&base[..2], meta.clone()), "Mcp-Name missing");
        let mut no_caps = meta.clone();
        no_caps
            .as_object_mut()
            .unwrap()
            .remove("io.modelcontextprotocol/clientCapabilities");
        assert!(!fits(&base, no_caps), "incomplete _meta");
        let mut progress = meta.clone();
        progress["progressToken"] = json!("p");
        assert!(!fits(&base, progress), "progress is rmcp's");
        let param = [base[0], base[1], base[2], ("mcp-param-x", "1")];
        assert_eq!(era_of(&with(&param), no_session), None);
    }
}
