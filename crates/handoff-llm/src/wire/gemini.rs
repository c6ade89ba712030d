//! Google Gemini `generateContent`. Structured output is `generationConfig.responseMimeType:
//! application/json` with `responseJsonSchema` (a JSON Schema, unlike the OpenAPI-subset
//! `responseSchema`).

use serde_json::{Value, json};

use super::{HttpCall, Parsed, u64_at};
use crate::{ChatRequest, LlmConfig, Role, Usage};

pub(crate) fn build(config: &LlmConfig, base: &str, request: &ChatRequest) -> HttpCall {
    let contents: Vec<Value> = request
        .turns
        .iter()
        .map(|t| {
            json!({
                "role": match t.role { Role::User => "user", Role::Assistant => "model" },
                "parts": [{"text": t.text}],
            })
        })
        .collect();
    let mut generation = json!({"maxOutputTokens": config.max_output_tokens});
    if let Some(t) = request.temperature {
        generation["temperature"] = json!(t);
    }
    if let Some((_, schema)) = &request.json_schema {
        generation["responseMimeType"] = json!("application/json");
        generation["responseJsonSchema"] = schema.clone();
    }
    let body = json!({
        "systemInstruction": {"parts": [{"text": request.system}]},
        "contents": contents,
        "generationConfig": generation,
    });
    HttpCall {
        url: format!("{base}/v1beta/models/{}:generateContent", config.model),
        headers: config
            .api_key
            .iter()
            .map(|k| ("x-goog-api-key", k.clone()))
            .collect(),
        body,
    }
}

pub(crate) fn parse(body: &Value) -> Result<Parsed, String> {
    let candidate = body.pointer("/candidates/0").ok_or("no `candidates[0]`")?;
    let text: String = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default();
    Ok(Parsed {
        text,
        usage: Usage {
            input_tokens: u64_at(body, "/usageMetadata/promptTokenCount"),
            output_tokens: u64_at(body, "/usageMetadata/candidatesTokenCount"),
        },
        stop_reason: candidate["finishReason"].as_str().map(str::to_owned),
    })
}
