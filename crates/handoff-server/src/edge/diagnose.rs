//! Says what is wrong with a JSON-RPC message rmcp could not take: which member of the
//! envelope, or which field of a known method's params. Messages name the field and quote at
//! most a short excerpt of what the client sent.

use rmcp::model::{
    CallToolRequestParams, CancelTaskParams, DiscoverRequestParams, GetTaskParams,
    InitializeRequestParams, PaginatedRequestParams, UpdateTaskParams,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST};

/// Longest quoted stretch of client input kept in a message, in characters.
pub(crate) const EXCERPT_CHARS: usize = 64;
/// Longest message built from a deserializer's words, in characters.
const MESSAGE_CHARS: usize = 300;
/// Longest string `id` echoed back; anything longer is no id a client could mean.
const MAX_ID_CHARS: usize = 256;

/// A JSON-RPC error: its code and a message naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// `-32600` (invalid request) or `-32602` (invalid params).
    pub(crate) code: i64,
    /// What is wrong, and where.
    pub(crate) message: String,
}

impl Problem {
    fn request(message: impl Into<String>) -> Self {
        Self {
            code: INVALID_REQUEST,
            message: message.into(),
        }
    }

    fn params(message: impl Into<String>) -> Self {
        Self {
            code: INVALID_PARAMS,
            message: message.into(),
        }
    }
}

/// What the params of a request say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParamsCheck {
    /// Not a method Handoff serves.
    UnknownMethod,
    /// A served method whose params are wrong, with what is wrong and where.
    Invalid(String),
    /// A served method whose params are fine.
    Valid,
}

/// Checks `params` against the method's schema, for the methods Handoff serves.
pub(crate) fn params_check(method: &str, params: Option<&Value>) -> ParamsCheck {
    match method {
        "initialize" => typed::<InitializeRequestParams>(params, true),
        "server/discover" => typed::<DiscoverRequestParams>(params, false),
        "tools/call" => typed::<CallToolRequestParams>(params, true),
        "tools/list" => typed::<PaginatedRequestParams>(params, false),
        "tasks/get" => typed::<GetTaskParams>(params, true),
        "tasks/update" => typed::<UpdateTaskParams>(params, true),
        "tasks/cancel" => typed::<CancelTaskParams>(params, true),
        "ping" => typed::<Map<String, Value>>(params, false),
        _ => ParamsCheck::UnknownMethod,
    }
}

fn typed<T: DeserializeOwned>(params: Option<&Value>, required: bool) -> ParamsCheck {
    let Some(params) = params else {
        return if required {
            ParamsCheck::Invalid("`params` is missing".into())
        } else {
            ParamsCheck::Valid
        };
    };
    if !params.is_object() {
        return ParamsCheck::Invalid(format!("`params` must be an object, not {}", kind(params)));
    }
    match serde_path_to_error::deserialize::<_, T>(params) {
        Ok(_) => ParamsCheck::Valid,
        Err(error) => {
            let path = error.path().to_string();
            let field = if path == "." {
                "`params`".to_owned()
            } else {
                format!("`params.{}`", excerpt(&path))
            };
            ParamsCheck::Invalid(format!("{field}: {}", shorten(&error.inner().to_string())))
        }
    }
}

/// Why `message` (valid JSON) is not a JSON-RPC 2.0 message rmcp can take.
pub(crate) fn envelope_problem(message: &Value) -> Problem {
    if let Value::Array(members) = message {
        return batch_problem(members, "HTTP request");
    }
    if let Some(problem) = malformed(message) {
        return problem;
    }
    match message.get("params") {
        Some(params) if !params.is_object() => {
            Problem::params(format!("`params` must be an object, not {}", kind(params)))
        }
        _ if message.get("method").is_some() => {
            Problem::request("the request does not match any MCP request or notification")
        }
        _ => response_problem(message),
    }
}

/// The refusal of a batch, naming the first member that would be refused on its own too;
/// `unit` is what carries one message (an HTTP request, a line).
pub(crate) fn batch_problem(members: &[Value], unit: &str) -> Problem {
    let mut message = format!(
        "batch requests (a JSON array) are not supported: send one JSON-RPC message per {unit}"
    );
    if let Some((index, problem)) = members
        .iter()
        .enumerate()
        .find_map(|(i, member)| malformed(member).map(|p| (i, p)))
    {
        message.push_str(&format!(
            " (member {index} is no message either: {})",
            problem.message
        ));
    }
    Problem::request(message)
}

/// What makes `message` no JSON-RPC 2.0 message at all: its shape, `jsonrpc`, `id`,
/// `method`, or a missing `method` where it is no response either.
fn malformed(message: &Value) -> Option<Problem> {
    let Some(object) = message.as_object() else {
        return Some(Problem::request(format!(
            "the body must be a JSON-RPC 2.0 message (a JSON object), not {}",
            kind(message)
        )));
    };
    match object.get("jsonrpc") {
        Some(Value::String(version)) if version == "2.0" => {}
        None => return Some(Problem::request("`jsonrpc` is missing: it must be \"2.0\"")),
        Some(_) => return Some(Problem::request("`jsonrpc` must be \"2.0\"")),
    }
    if let Some(id) = object.get("id")
        && !valid_id(id)
    {
        return Some(Problem::request(format!(
            "`id` must be a string or an integer, not {}",
            kind(id)
        )));
    }
    match object.get("method") {
        Some(Value::String(_)) => None,
        Some(other) => Some(Problem::request(format!(
            "`method` must be a string, not {}",
            kind(other)
        ))),
        None if !object.contains_key("id") => Some(Problem::request(
            "`method` is missing: the message has no `method` (a request or notification) and \
             no `id` (a response)",
        )),
        None if !object.contains_key("result") && !object.contains_key("error") => {
            Some(Problem::request(
                "`method` is missing: a request needs `method` (a response would need `result` \
                 or `error`)",
            ))
        }
        None => None,
    }
}

/// A well-formed message without `method`: it can only be a response to one of the server's
/// requests.
fn response_problem(object: &Value) -> Problem {
    match (object.get("result"), object.get("error")) {
        (Some(_), Some(_)) => Problem::request("a response has `result` or `error`, not both"),
        (None, Some(error)) => {
            let code_ok = error.get("code").is_some_and(Value::is_i64);
            let message_ok = error.get("message").is_some_and(Value::is_string);
            if code_ok && message_ok {
                Problem::request("the error response does not match JSON-RPC 2.0")
            } else {
                Problem::request(
                    "`error` must be an object with an integer `code` and a string `message`",
                )
            }
        }
        (Some(_), None) => Problem::request("the response does not match any MCP result"),
        (None, None) => Problem::request("a response needs `result` or `error`"),
    }
}

fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64(),
        _ => false,
    }
}

/// The message's `id` when it is one a reply may carry, else `null`.
pub(crate) fn reply_id(message: &Value) -> Value {
    match message.get("id") {
        Some(Value::String(s)) if s.chars().count() <= MAX_ID_CHARS => Value::String(s.clone()),
        Some(id @ Value::Number(n)) if n.is_i64() => id.clone(),
        _ => Value::Null,
    }
}

/// A JSON value's kind, for messages that must not quote it.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `text` cut to [`EXCERPT_CHARS`] characters, with its size when cut.
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
    }
}

/// A deserializer's message with every quoted stretch of client input cut to an excerpt, and
/// the whole bounded.
pub(crate) fn shorten(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    // serde quotes input in `"…"` (strings, escaped) or `` `…` `` (field and variant names).
    while let Some(open) = rest.find(['"', '`']) {
        let quote = if rest[open..].starts_with('"') {
            '"'
        } else {
            '`'
        };
        let body = &rest[open + 1..];
        let Some(close) = closing(body, quote) else {
            break;
        };
        out.push_str(&rest[..=open]);
        out.push_str(&excerpt(&body[..close]));
        out.push(quote);
        rest = &body[close + 1..];
    }
    out.push_str(rest);
    excerpt_long(&out)
}

/// Where the quote opened before `body` closes: the next `quote` not escaped by a backslash.
fn closing(body: &str, quote: char) -> Option<usize> {
    let mut escaped = false;
    for (at, c) in body.char_indices() {
        match c {
            '\\' if quote == '"' && !escaped => escaped = true,
            c if c == quote && !escaped => return Some(at),
            _ => escaped = false,
        }
    }
    None
}

fn excerpt_long(text: &str) -> String {
    match text.char_indices().nth(MESSAGE_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn params_name_the_field() {
        let check = |method, params: Value| match params_check(method, Some(&params)) {
            ParamsCheck::Invalid(message) => message,
            other => panic!("{method}: {other:?}"),
        };
        let arguments = check("tools/call", json!({"name": "ping", "arguments": []}));
        assert!(arguments.starts_with("`params.arguments`"), "{arguments}");
        let task = check("tasks/get", json!({"taskId": 5}));
        assert!(task.starts_with("`params.taskId`"), "{task}");
        let update = check("tasks/update", json!({"taskId": "t"}));
        assert!(update.contains("inputResponses"), "{update}");
        let init = check("initialize", json!({"protocolVersion": "2025-06-18"}));
        assert!(
            init.contains("capabilities") || init.contains("clientInfo"),
            "{init}"
        );
        assert_eq!(
            params_check("tools/call", None),
            ParamsCheck::Invalid("`params` is missing".into())
        );
        assert_eq!(params_check("tools/list", None), ParamsCheck::Valid);
        assert_eq!(
            params_check("prompts/list", None),
            ParamsCheck::UnknownMethod
        );
    }

    #[test]
    fn messages_never_carry_a_long_value() {
        let huge = "x".repeat(100_000);
        let ParamsCheck::Invalid(message) =
            params_check("tasks/get", Some(&json!({"taskId": [huge.clone()]})))
        else {
            panic!("not refused");
        };
        assert!(message.len() < 400, "{message}");
        let ParamsCheck::Invalid(message) = params_check(
            "tools/call",
            Some(&json!({"name": "ping", "arguments": huge})),
        ) else {
            panic!("not refused");
        };
        assert!(message.len() < 400, "{message}");
        assert!(message.contains("100000 bytes"), "{message}");
        let unknown_field = shorten(&format!("unknown field `{huge}`, expected `a`"));
        assert!(unknown_field.len() < 400, "{unknown_field}");
        assert!(unknown_field.ends_with("expected `a`"), "{unknown_field}");
    }

    #[test]
    fn envelopes_name_the_member() {
        let problem = |body: Value| envelope_problem(&body);
        assert!(problem(json!([1])).message.contains("batch"));
        assert!(problem(json!("hi")).message.contains("a string"));
        assert!(
            problem(json!({"id": 1, "method": "ping"}))
                .message
                .contains("`jsonrpc`")
        );
        assert!(
            problem(json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}))
                .message
                .contains("`jsonrpc`")
        );
        assert!(
            problem(json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}))
                .message
                .contains("`id`")
        );
        assert!(
            problem(json!({"jsonrpc": "2.0", "id": 1, "method": 5}))
                .message
                .contains("`method`")
        );
        let params = problem(json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": 3}));
        assert_eq!(params.code, INVALID_PARAMS);
        assert!(
            problem(json!({"jsonrpc": "2.0"}))
                .message
                .contains("`method`")
        );
        assert!(
            problem(json!({"jsonrpc": "2.0", "id": 1}))
                .message
                .starts_with("`method` is missing")
        );
        let batch = problem(json!([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2}
        ]));
        assert!(
            batch
                .message
                .contains("member 1 is no message either: `method`"),
            "{}",
            batch.message
        );
        assert!(
            problem(json!([{"jsonrpc": "2.0", "id": [1], "method": "ping"}]))
                .message
                .contains("member 0 is no message either: `id`")
        );
        assert!(
            problem(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "x"}}))
                .message
                .contains("`error`")
        );
        assert_eq!(reply_id(&json!({"id": 7})), json!(7));
        assert_eq!(reply_id(&json!({"id": 1.5})), Value::Null);
        assert_eq!(reply_id(&json!({"id": "x".repeat(300)})), Value::Null);
    }
}
