//! OpenAI Chat Completions, and OpenAI-compatible servers (xAI, local). Structured output is
//! `response_format: {type: json_schema, json_schema: {name, schema, strict: true}}`.

use serde_json::{Value, json};

use super::{HttpCall, Parsed, bearer, role_messages, u64_at};
use crate::{ChatRequest, LlmConfig, Provider, Usage};

pub(crate) fn build(config: &LlmConfig, base: &str, request: &ChatRequest) -> HttpCall {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    messages.extend(role_messages(request));
    let mut body = json!({"model": config.model, "messages": messages, "stream": false});
    // OpenAI itself renamed the limit; compatible servers still read the old name.
    let limit = if config.provider == Provider::Openai {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit] = json!(config.max_output_tokens);
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some((name, schema)) = &request.json_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": true},
        });
    }
    HttpCall {
        url: format!("{base}/chat/completions"),
        headers: bearer(config),
        body,
    }
}

pub(crate) fn parse(body: &Value) -> Result<Parsed, String> {
    let choice = body.pointer("/choices/0").ok_or("no `choices[0]`")?;
    let text = choice
        .pointer("/message/content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(Parsed {
        text,
        usage: Usage {
            input_tokens: u64_at(body, "/usage/prompt_tokens"),
            output_tokens: u64_at(body, "/usage/completion_tokens"),
        },
        stop_reason: choice["finish_reason"].as_str().map(str::to_owned),
    })
}
