//! JSON-RPC 2.0 as one line per message: the lines Handoff writes to an agent, and what a line
//! the agent wrote is (a request, a notification, or the answer to one of Handoff's requests).

use serde_json::{Value, json};

/// A request named `id` (Handoff names its requests so their answers can be told apart).
pub(crate) fn request(id: &str, method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// A notification (no answer expected); `None` leaves `params` out.
pub(crate) fn notification(method: &str, params: Option<Value>) -> String {
    match params {
        Some(params) => json!({ "jsonrpc": "2.0", "method": method, "params": params }),
        None => json!({ "jsonrpc": "2.0", "method": method }),
    }
    .to_string()
}

/// The answer to one of the agent's requests.
pub(crate) fn response(id: &Value, result: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string()
}

/// An error answer to a request Handoff does not serve.
pub(crate) fn unsupported(id: &Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id,
        "error": { "code": -32601, "message": "not supported by Handoff" } })
    .to_string()
}

/// A JSON-RPC id as text (ids may be numbers or strings).
pub(crate) fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What one message from the agent is.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming<'a> {
    /// The agent asks Handoff something and waits for the answer.
    Request {
        method: &'a str,
        id: &'a Value,
        params: &'a Value,
    },
    /// The agent tells Handoff something.
    Notification { method: &'a str, params: &'a Value },
    /// The answer to Handoff's request `id`: its result, or the error object (each protocol
    /// words errors its own way).
    Response {
        id: String,
        result: Result<Value, &'a Value>,
    },
    /// Neither a method nor an id: nothing to act on.
    Nothing,
}

/// Sorts `message` (a null id counts as none; missing params read as null).
pub(crate) fn incoming(message: &Value) -> Incoming<'_> {
    let id = message.get("id").filter(|id| !id.is_null());
    let params = message.get("params").unwrap_or(&Value::Null);
    match (message.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Incoming::Request { method, id, params },
        (Some(method), None) => Incoming::Notification { method, params },
        (None, Some(id)) => Incoming::Response {
            id: id_text(id),
            result: match message.get("error") {
                Some(error) => Err(error),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            },
        },
        (None, None) => Incoming::Nothing,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_sorted_by_method_and_id() {
        let asked = json!({"jsonrpc": "2.0", "id": 3, "method": "ask", "params": {"a": 1}});
        assert_eq!(
            incoming(&asked),
            Incoming::Request {
                method: "ask",
                id: &json!(3),
                params: &json!({"a": 1})
            }
        );
        let told = json!({"jsonrpc": "2.0", "id": null, "method": "tell"});
        assert_eq!(
            incoming(&told),
            Incoming::Notification {
                method: "tell",
                params: &Value::Null
            }
        );
        let answered = json!({"jsonrpc": "2.0", "id": "handoff-x", "result": {"ok": true}});
        assert_eq!(
            incoming(&answered),
            Incoming::Response {
                id: "handoff-x".to_owned(),
                result: Ok(json!({"ok": true}))
            }
        );
        let failed = json!({"jsonrpc": "2.0", "id": 7, "error": {"message": "no"}});
        assert_eq!(
            incoming(&failed),
            Incoming::Response {
                id: "7".to_owned(),
                result: Err(&json!({"message": "no"}))
            }
        );
        assert_eq!(incoming(&json!({"jsonrpc": "2.0"})), Incoming::Nothing);
    }

    #[test]
    fn lines_are_json_rpc_2() {
        let line: Value = serde_json::from_str(&request("r1", "m", json!({"x": 1}))).unwrap();
        assert_eq!(
            line,
            json!({"jsonrpc": "2.0", "id": "r1", "method": "m", "params": {"x": 1}})
        );
        let bare: Value = serde_json::from_str(&notification("n", None)).unwrap();
        assert_eq!(bare, json!({"jsonrpc": "2.0", "method": "n"}));
        let error: Value = serde_json::from_str(&unsupported(&json!(4))).unwrap();
        assert_eq!(error["error"]["code"], -32601);
        assert_eq!(error["id"], 4);
        let answer: Value = serde_json::from_str(&response(&json!("a"), json!(1))).unwrap();
        assert_eq!(answer, json!({"jsonrpc": "2.0", "id": "a", "result": 1}));
    }
}
