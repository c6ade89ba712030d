//! Anthropic Messages. Structured output is a forced tool call whose input follows the schema
//! (the API's documented way to get schema-conforming JSON).

use serde_json::{Value, json};

use super::{HttpCall, Parsed, role_messages, u64_at};
use crate::{ChatRequest, LlmConfig, Usage};

pub(crate) fn build(config: &LlmConfig, base: &str, request: &ChatRequest) -> HttpCall {
    let messages = role_messages(request);
    let mut body = json!({
        "model": config.model,
        "max_tokens": config.max_output_tokens,
        "system": request.system,
        "messages": messages,
    });
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some((name, schema)) = &request.json_schema {
        body["tools"] = json!([{
            "name": name,
            "description": "Record the answer. Always call this tool exactly once.",
            "input_schema": schema,
        }]);
        body["tool_choice"] = json!({"type": "tool", "name": name});
    }
    let mut headers = vec![("anthropic-version", "2023-06-01".to_owned())];
    if let Some(key) = &config.api_key {
        headers.push(("x-api-key", key.clone()));
    }
    HttpCall {
        url: format!("{base}/v1/messages"),
        headers,
        body,
    }
}

pub(crate) fn parse(body: &Value) -> Result<Parsed, String> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or("no `content` array")?;
    // A forced tool call carries the answer as its input; otherwise the text blocks do.
    let text = match content.iter().find(|b| b["type"] == "tool_use") {
        Some(tool) => tool
            .get("input")
            .cloned()
            .unwrap_or(Value::Null)
            .to_string(),
        None => content
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .concat(),
    };
    Ok(Parsed {
        text,
        usage: Usage {
            input_tokens: u64_at(body, "/usage/input_tokens"),
            output_tokens: u64_at(body, "/usage/output_tokens"),
        },
        stop_reason: body["stop_reason"].as_str().map(str::to_owned),
    })
}
