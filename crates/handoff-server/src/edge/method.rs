//! The JSON-RPC method of a request, as a bounded metrics label.

use http::Method;
use serde_json::Value;

/// Methods counted under their own name; anything else is `other`, so label values stay bounded
/// whatever clients send.
const KNOWN: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "ping",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "resources/list",
    "prompts/list",
    "logging/setLevel",
    "server/discover",
];

/// What a request to `/mcp` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RpcMethod(pub &'static str);

impl RpcMethod {
    /// Requests without a JSON-RPC body: the SSE stream and session deletion.
    pub(crate) fn for_http(method: &Method) -> Self {
        match *method {
            Method::GET => RpcMethod("GET stream"),
            Method::DELETE => RpcMethod("DELETE session"),
            Method::POST => RpcMethod("unparsed"),
            _ => RpcMethod("other"),
        }
    }

    /// The method of a parsed body (`response` for client replies, `batch` for arrays).
    pub(crate) fn of(message: &Value) -> Self {
        match message {
            Value::Array(_) => RpcMethod("batch"),
            Value::Object(map) => match map.get("method").and_then(Value::as_str) {
                Some(name) => RpcMethod(
                    KNOWN
                        .iter()
                        .find(|known| **known == name)
                        .copied()
                        .unwrap_or("other"),
                ),
                None => RpcMethod("response"),
            },
            _ => RpcMethod("other"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn labels_are_bounded() {
        assert_eq!(
            RpcMethod::of(&json!({"method": "tools/call"})).0,
            "tools/call"
        );
        assert_eq!(RpcMethod::of(&json!({"method": "x/evil-123"})).0, "other");
        assert_eq!(RpcMethod::of(&json!([{"method": "ping"}])).0, "batch");
        assert_eq!(RpcMethod::of(&json!({"result": {}})).0, "response");
    }
}
