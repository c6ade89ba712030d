//! A Letta custom tool per Handoff tool: Python source (standard library only) that sends ONE
//! stateless MCP 2026-07-28 `tools/call` to Handoff, as the agent Letta runs it for, and returns
//! the result's text. The schema the LLM sees is Handoff's own, less `agent_id`: the caller is
//! `LETTA_AGENT_ID`, which Letta sets in the sandbox after every other variable.

use serde_json::{Map, Value, json};

use super::{ConnectError, handoff::HandoffTool};
use crate::NewTool;

/// Tag on every tool connect makes (with [`marker`] naming the prefix).
pub(crate) const MARK: &str = "handoff-connect";

/// Seconds a native tool waits for Handoff (Letta's sandbox gives a tool 180 s).
const CALL_TIMEOUT_SECS: u32 = 170;

/// The tag naming the prefix a tool was made for.
pub(crate) fn marker(prefix: &str) -> String {
    format!("{MARK}:{prefix}")
}

/// The Letta name of Handoff's `tool`.
pub(crate) fn native_name(prefix: &str, tool: &str) -> String {
    format!("{prefix}_{tool}")
}

/// The agent secrets native tools read: Handoff's `/mcp` URL and the token to present.
pub(crate) fn env_names(prefix: &str) -> [String; 2] {
    let upper = prefix.to_ascii_uppercase();
    [format!("{upper}_MCP_URL"), format!("{upper}_MCP_TOKEN")]
}

/// The Letta tool for Handoff's `tool`.
pub(crate) fn native_tool(prefix: &str, tool: &HandoffTool) -> Result<NewTool, ConnectError> {
    let name = native_name(prefix, &tool.name);
    let schema =
        super::schema::for_letta(&tool.input_schema).map_err(|problem| ConnectError::Schema {
            tool: tool.name.clone(),
            problem,
        })?;
    let params = parameters(&tool.name, &schema)?;
    let source = [
        format!("def {name}({}) -> str:", signature(&params)),
        docstring(&tool.description, &params),
        body(prefix, &tool.name, &params),
    ]
    .join("\n");
    Ok(NewTool {
        source_code: source,
        source_type: "python".to_owned(),
        description: tool.description.clone(),
        tags: vec![MARK.to_owned(), marker(prefix)],
        json_schema: json!({
            "name": name,
            "description": tool.description,
            "parameters": schema,
        }),
    })
}

/// One argument of the Python function.
#[derive(Debug, Clone, PartialEq)]
struct Param {
    name: String,
    /// The Python type (`str`, `int`, …), when the schema names one.
    python: Option<&'static str>,
    description: String,
    required: bool,
}

/// The arguments of the Letta schema, required ones first (Python wants defaults last).
fn parameters(tool: &str, schema: &Map<String, Value>) -> Result<Vec<Param>, ConnectError> {
    let empty = Map::new();
    // A Map panics on a missing key where a Value gives null: look up with `get`.
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params = Vec::new();
    for (name, schema) in properties {
        if !is_identifier(name) {
            return Err(ConnectError::Schema {
                tool: tool.to_owned(),
                problem: format!("argument {name:?} cannot be a Python parameter name"),
            });
        }
        params.push(Param {
            name: name.clone(),
            python: python_type(schema),
            description: schema["description"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            required: required.contains(&name.as_str()),
        });
    }
    params.sort_by_key(|p| !p.required);
    Ok(params)
}

/// The function's parameter list: required ones bare, the rest defaulting to `None`.
fn signature(params: &[Param]) -> String {
    let one = |p: &Param| {
        let typed = match p.python {
            Some(t) => format!("{}: {t}", p.name),
            None => p.name.clone(),
        };
        if p.required {
            typed
        } else {
            format!("{typed} = None")
        }
    };
    params.iter().map(one).collect::<Vec<_>>().join(", ")
}

/// A Google-style docstring with the tool's description and each argument's.
fn docstring(description: &str, params: &[Param]) -> String {
    let mut lines = vec![format!("    \"\"\"{}", indent(&escape(description), 4))];
    if !params.is_empty() {
        lines.push(String::new());
        lines.push("    Args:".to_owned());
        for p in params {
            let kind = p.python.unwrap_or("any");
            let text = indent(&escape(&p.description), 12);
            lines.push(format!("        {} ({kind}): {text}", p.name));
        }
    }
    lines.extend([
        String::new(),
        "    Returns:".to_owned(),
        "        str: Handoff's answer (the MCP tool result's text).".to_owned(),
        "    \"\"\"".to_owned(),
    ]);
    lines.join("\n")
}

/// The call itself; every local starts with `_` so no argument name can shadow it.
fn body(prefix: &str, tool: &str, params: &[Param]) -> String {
    let [url_var, token_var] = env_names(prefix);
    let pairs: Vec<String> = params
        .iter()
        .map(|p| format!("({}, {})", literal(&p.name), p.name))
        .collect();
    let not_connected = format!(
        "Handoff is not connected to this agent ({url_var} / {token_var} unset): run \
         `handoff letta connect --agent <this agent>`"
    );
    BODY.replace("@PAIRS@", &pairs.join(", "))
        .replace("@URL_VAR@", &literal(&url_var))
        .replace("@TOKEN_VAR@", &literal(&token_var))
        .replace("@NOT_CONNECTED@", &literal(&not_connected))
        .replace("@TOOL@", &literal(tool))
        .replace("@META@", &super::handoff::meta().to_string())
        .replace("@PROTOCOL@", &literal(super::handoff::PROTOCOL))
        .replace("@TIMEOUT@", &CALL_TIMEOUT_SECS.to_string())
        .replace("@NAMES@", &literal(&names_pattern()))
        .replace("@PREFIX@", &literal(&format!("{prefix}_")))
}

/// A regular expression matching Handoff's tool names as whole words: Handoff's texts name its
/// tools as an MCP client sees them, and the agent sees them under the prefix.
fn names_pattern() -> String {
    format!(
        "(?<![A-Za-z0-9_])({})(?![A-Za-z0-9_])",
        super::TOOLS.join("|")
    )
}

/// The function body after the docstring (placeholders `@…@` filled by [`body`]).
const BODY: &str = r#"    _args = {_k: _v for _k, _v in [@PAIRS@] if _v is not None}
    import json as _json
    import os as _os
    import urllib.error as _error
    import urllib.request as _request

    _url = _os.environ.get(@URL_VAR@, "")
    _token = _os.environ.get(@TOKEN_VAR@, "")
    _agent = _os.environ.get("LETTA_AGENT_ID", "")
    if not (_url and _token and _agent):
        raise RuntimeError(@NOT_CONNECTED@)
    _body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": @TOOL@, "arguments": _args, "_meta": @META@},
    }
    _headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": @PROTOCOL@,
        "mcp-method": "tools/call",
        "mcp-name": @TOOL@,
        "authorization": "Bearer " + _token,
        "x-agent-id": _agent,
    }
    _call = _request.Request(_url, data=_json.dumps(_body).encode("utf-8"), headers=_headers, method="POST")
    try:
        with _request.urlopen(_call, timeout=@TIMEOUT@) as _response:
            _text = _response.read().decode("utf-8", "replace")
    except _error.HTTPError as _failure:
        _text = _failure.read().decode("utf-8", "replace") or ("HTTP %d" % _failure.code)
    except (_error.URLError, OSError) as _failure:
        raise RuntimeError("Handoff is unreachable at %s: %s" % (_url, getattr(_failure, "reason", _failure)))
    _message = None
    for _line in _text.splitlines():
        if _line.startswith("data:"):
            try:
                _message = _json.loads(_line[5:].strip())
            except ValueError:
                pass
    if _message is None:
        try:
            _message = _json.loads(_text)
        except ValueError:
            raise RuntimeError("Handoff did not answer with JSON-RPC: " + _text[:500])
    import re as _re
    _names = _re.compile(@NAMES@)

    def _as_seen(_text):
        return _names.sub(lambda _m: @PREFIX@ + _m.group(1), _text)

    def _one_line(_text):
        # Letta shows the model only an error's first line: the whole error goes on one.
        return " ".join(_l.strip() for _l in _as_seen(_text).splitlines() if _l.strip())

    if _message.get("error"):
        _error_body = _message["error"]
        raise RuntimeError(_one_line("Handoff refused the call: " + str(_error_body.get("message", _error_body))))
    _result = _message.get("result") or {}
    _content = "\n".join(_p.get("text", "") for _p in _result.get("content", []) if _p.get("type") == "text")
    if _result.get("isError"):
        raise RuntimeError(_one_line(_content) or "Handoff reported an error without text")
    return _as_seen(_content)
"#;

/// The Python type of a (Letta-shaped, single-typed) property.
fn python_type(schema: &Value) -> Option<&'static str> {
    Some(match schema.get("type")?.as_str()? {
        "string" => "str",
        "integer" => "int",
        "number" => "float",
        "boolean" => "bool",
        "array" => "list",
        "object" => "dict",
        _ => return None,
    })
}

/// Whether `name` can be a parameter: an identifier, not a keyword, not `_`-led (the body's
/// locals are).
fn is_identifier(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
        && name != "agent_state"
}

/// A Python string literal (JSON's escapes are Python's).
fn literal(text: &str) -> String {
    Value::from(text).to_string()
}

/// Text made safe inside a `"""` docstring.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
}

/// Continuation lines indented by `spaces` (blank ones left blank).
fn indent(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    let mut lines = text.trim().lines();
    let first = lines.next().unwrap_or_default().to_owned();
    lines.fold(first, |mut out, line| {
        out.push('\n');
        if !line.trim().is_empty() {
            out.push_str(&pad);
            out.push_str(line.trim_end());
        }
        out
    })
}

#[cfg(test)]
#[path = "python_tests.rs"]
mod tests;
