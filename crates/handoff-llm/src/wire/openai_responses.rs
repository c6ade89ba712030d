//! OpenAI Responses. Structured output is `text.format: {type: json_schema, name, schema,
//! strict: true}`; the answer is the `output_text` parts of the `message` output items.

use serde_json::{Value, json};

use super::{HttpCall, Parsed, bearer, role_messages, u64_at};
use crate::{ChatRequest, LlmConfig, Usage};

pub(crate) fn build(config: &LlmConfig, base: &str, request: &ChatRequest) -> HttpCall {
    let input = role_messages(request);
    let mut body = json!({
        "model": config.model,
        "instructions": request.system,
        "input": input,
        "max_output_tokens": config.max_output_tokens,
        "store": false,
    });
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some((name, schema)) = &request.json_schema {
        body["text"] = json!({"format": {"type": "json_schema", "name": name, "schema": schema, "strict": true}});
    }
    HttpCall {
        url: format!("{base}/responses"),
        headers: bearer(config),
        body,
    }
}

pub(crate) fn parse(body: &Value) -> Result<Parsed, String> {
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or("no `output` array")?;
    let text: String = output
        .iter()
        .filter(|item| item["type"] == "message")
        .filter_map(|item| item["content"].as_array())
        .flatten()
        .filter(|part| part["type"] == "output_text")
        .filter_map(|part| part["text"].as_str())
        .collect();
    Ok(Parsed {
        text,
        usage: Usage {
            input_tokens: u64_at(body, "/usage/input_tokens"),
            output_tokens: u64_at(body, "/usage/output_tokens"),
        },
        stop_reason: body["status"].as_str().map(str::to_owned),
    })
}
