//! Reading a served request from the edge's parsed body, as the one type its method names.
//!
//! rmcp reads a message as `ClientJsonRpcMessage`: it buffers the body, walks its keys to tell
//! a request from a notification or a response, then tries each of `ClientRequest`'s twenty-odd
//! untagged variants in turn until one takes the `method` — every miss builds an error
//! message, and `tools/call` is the fourteenth. This path serves three methods, so it looks at
//! `method` and reads that type alone. It takes only what rmcp would read as the same request:
//! `jsonrpc` exactly "2.0", an `id`, no `result` or `error` beside the `method`; anything else
//! is left for rmcp.

use rmcp::model::{CallToolRequest, ClientRequest, ListToolsRequest, PingRequest, RequestId};
use serde::Deserialize;
use serde_json::Value;

/// Which of the served methods a body names.
enum Served {
    Ping,
    ToolsList,
    ToolsCall,
}

/// The id and request of `body`, when it is a `ping`, `tools/list` or `tools/call` request.
/// Read by value: the arguments' strings move into the request instead of being copied.
pub(super) fn served_request(body: Value) -> Option<(RequestId, ClientRequest)> {
    let message = body.as_object()?;
    if message.get("jsonrpc")?.as_str()? != "2.0"
        || message.contains_key("result")
        || message.contains_key("error")
    {
        return None;
    }
    let id = RequestId::deserialize(message.get("id")?).ok()?;
    let served = match message.get("method")?.as_str()? {
        "ping" => Served::Ping,
        "tools/list" => Served::ToolsList,
        "tools/call" => Served::ToolsCall,
        _ => return None,
    };
    let request = match served {
        Served::Ping => ClientRequest::PingRequest(PingRequest::deserialize(body).ok()?),
        Served::ToolsList => {
            ClientRequest::ListToolsRequest(ListToolsRequest::deserialize(body).ok()?)
        }
        Served::ToolsCall => {
            ClientRequest::CallToolRequest(CallToolRequest::deserialize(body).ok()?)
        }
    };
    Some((id, request))
}

#[cfg(test)]
mod tests {
    use rmcp::model::ClientJsonRpcMessage;
    use serde_json::json;

    use super::*;

    /// rmcp's reading of `body`, when it is a request.
    fn rmcp(body: &Value) -> Option<(RequestId, ClientRequest)> {
        match ClientJsonRpcMessage::deserialize(body).ok()? {
            ClientJsonRpcMessage::Request(r) => Some((r.id, r.request)),
            _ => None,
        }
    }

    #[test]
    fn a_served_request_is_read_as_rmcp_reads_it() {
        let meta = json!({"progressToken": 3, "io.modelcontextprotocol/protocolVersion": "x"});
        let served = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": "a", "method": "ping", "params": {"_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "c"}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                   "params": {"name": "health", "arguments": {"a": [1]}, "_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "x"}}),
        ];
        for body in &served {
            let (id, request) = served_request(body.clone()).expect("served");
            let (rmcp_id, rmcp_request) = rmcp(body).expect("a request to rmcp");
            assert_eq!(id, rmcp_id, "{body}");
            assert_eq!(request.method(), rmcp_request.method(), "{body}");
            assert_eq!(
                serde_json::to_value(&request).unwrap(),
                serde_json::to_value(&rmcp_request).unwrap(),
                "{body}"
            );
        }
    }

    #[test]
    fn anything_else_is_left_to_rmcp() {
        let left = [
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "error": {}}),
            json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
            json!({"id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 7}),
            json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
        ];
        for body in &left {
            assert!(served_request(body.clone()).is_none(), "{body}");
        }
    }
}
