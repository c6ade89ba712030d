//! Each wire format against the scripted model server (which answers in each provider's real
//! shape and logs the exact request bodies): structured output, usage and cost, retries on 5xx,
//! no retry on 4xx, timeouts, unreachable servers.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use handoff_llm::{ChatRequest, LlmClient, LlmConfig, LlmError, Pricing, Provider, Turn};
use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"done": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["done", "reason"],
        "additionalProperties": false
    })
}

fn judge_request() -> ChatRequest {
    ChatRequest {
        system: "You judge whether a task is done.".to_owned(),
        turns: vec![Turn::user("VERDICT please: is the task done?")],
        json_schema: Some(("verdict".to_owned(), verdict_schema())),
        temperature: Some(0.0),
    }
}

async fn model(untooled: Value) -> ScriptedModel {
    let script = json!({
        "scenarios": [{"match": "VERDICT", "turns": [
            {"tool_calls": [{"name": "verdict", "arguments": {"done": true, "reason": "scripted"}}]}
        ]}],
        "default": {"text": "no scenario"},
        "untooled": untooled
    });
    ScriptedModel::start(Script::from_json(&script.to_string()).unwrap(), None)
        .await
        .unwrap()
}

fn config(provider: Provider, model: &ScriptedModel) -> LlmConfig {
    let base = match provider {
        Provider::Anthropic | Provider::Gemini => model.base_url(),
        _ => model.openai_base_url(),
    };
    LlmConfig {
        api_key: Some("sk-test".to_owned()),
        base_url: Some(base),
        backoff: Duration::from_millis(10),
        max_retries: 2,
        pricing: Some(Pricing {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        }),
        ..LlmConfig::new(provider, "mock-model")
    }
}

#[tokio::test]
async fn every_wire_format_returns_the_structured_answer_with_usage_and_cost() {
    let model = model(json!({"text": "{\"done\": true, \"reason\": \"scripted\"}"})).await;
    for provider in [
        Provider::Anthropic,
        Provider::Openai,
        Provider::OpenaiResponses,
        Provider::Gemini,
        Provider::OpenaiCompatible,
    ] {
        let client = LlmClient::new(config(provider, &model), http());
        let answer = client.complete(&judge_request()).await.unwrap();
        let verdict: Value = serde_json::from_str(&answer.text)
            .unwrap_or_else(|e| panic!("{provider:?}: {e}: {}", answer.text));
        assert_eq!(verdict["done"], true, "{provider:?}");
        assert_eq!(verdict["reason"], "scripted", "{provider:?}");
        assert!(
            answer.usage.input_tokens > 0,
            "{provider:?}: {:?}",
            answer.usage
        );
        assert!(
            answer.usage.output_tokens > 0,
            "{provider:?}: {:?}",
            answer.usage
        );
        let cost = answer.cost_usd.unwrap();
        let expected = (answer.usage.input_tokens as f64 * 3.0
            + answer.usage.output_tokens as f64 * 15.0)
            / 1e6;
        assert!((cost - expected).abs() < 1e-12, "{provider:?}");
        assert_eq!(answer.attempts, 1);
    }
    // The exact wire shapes, as the server received them.
    let bodies: Vec<(String, Value)> = model
        .requests()
        .into_iter()
        .map(|r| (r.path.clone(), r.body))
        .collect();
    let body = |path: &str, n: usize| -> &Value {
        &bodies
            .iter()
            .filter(|(p, _)| p.contains(path))
            .nth(n)
            .unwrap_or_else(|| panic!("{path} #{n}"))
            .1
    };
    let anthropic = body("/v1/messages", 0);
    assert_eq!(anthropic["system"], "You judge whether a task is done.");
    assert_eq!(
        anthropic["tool_choice"],
        json!({"type": "tool", "name": "verdict"})
    );
    assert_eq!(anthropic["tools"][0]["input_schema"], verdict_schema());
    assert_eq!(anthropic["max_tokens"], 4096);
    let chat = body("/chat/completions", 0);
    assert_eq!(chat["messages"][0]["role"], "system");
    assert_eq!(chat["response_format"]["type"], "json_schema");
    assert_eq!(chat["response_format"]["json_schema"]["strict"], true);
    assert_eq!(chat["max_completion_tokens"], 4096);
    let compatible = body("/chat/completions", 1);
    assert_eq!(compatible["max_tokens"], 4096);
    let responses = body("/responses", 0);
    assert_eq!(
        responses["instructions"],
        "You judge whether a task is done."
    );
    assert_eq!(responses["text"]["format"]["type"], "json_schema");
    assert_eq!(responses["input"][0]["role"], "user");
    let gemini = body("generateContent", 0);
    assert_eq!(
        gemini["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(
        gemini["generationConfig"]["responseJsonSchema"],
        verdict_schema()
    );
    assert_eq!(
        gemini["systemInstruction"]["parts"][0]["text"],
        "You judge whether a task is done."
    );
    assert_eq!(gemini["contents"][0]["role"], "user");
    model.shutdown().await;
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let model = model(
        json!({"error": {"status": 503, "type": "overloaded_error", "message": "try later"}}),
    )
    .await;
    let client = LlmClient::new(config(Provider::Openai, &model), http());
    let err = client
        .complete(&ChatRequest {
            json_schema: None,
            ..judge_request()
        })
        .await
        .unwrap_err();
    let LlmError::Exhausted { attempts, last, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*attempts, 3);
    assert!(last.contains("503") && last.contains("try later"), "{last}");
    assert_eq!(model.requests().len(), 3);
    model.shutdown().await;
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let model = model(
        json!({"error": {"status": 400, "type": "invalid_request_error", "message": "bad schema"}}),
    )
    .await;
    let client = LlmClient::new(config(Provider::Gemini, &model), http());
    let err = client
        .complete(&ChatRequest {
            json_schema: None,
            ..judge_request()
        })
        .await
        .unwrap_err();
    let LlmError::Refused {
        status, message, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*status, 400);
    assert!(message.contains("bad schema"), "{message}");
    assert_eq!(model.requests().len(), 1);
    model.shutdown().await;
}

#[tokio::test]
async fn a_slow_answer_times_out_per_attempt() {
    // The model never answers: only the per-attempt timeout can end the call.
    let model = model(json!({"hang": true})).await;
    let mut cfg = config(Provider::OpenaiResponses, &model);
    cfg.timeout = Duration::from_millis(300);
    cfg.max_retries = 1;
    let client = LlmClient::new(cfg, http());
    let request = ChatRequest {
        json_schema: None,
        ..judge_request()
    };
    let call = client.complete(&request);
    // How fast it gives up belongs to a benchmark; a minute only tells "never" from "did".
    let err = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the per-attempt timeout never ended the call")
        .unwrap_err();
    assert!(err.to_string().contains("no answer within"), "{err}");
    assert_eq!(model.requests().len(), 2, "one attempt and one retry");
    model.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_server_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let cfg = LlmConfig {
        base_url: Some(format!("http://127.0.0.1:{port}")),
        backoff: Duration::from_millis(5),
        max_retries: 2,
        ..LlmConfig::new(Provider::Anthropic, "m")
    };
    let err = LlmClient::new(cfg, http())
        .complete(&judge_request())
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Exhausted { attempts: 3, .. }),
        "{err}"
    );
    let compatible = LlmConfig::new(Provider::OpenaiCompatible, "m");
    let err = LlmClient::new(compatible, http())
        .complete(&judge_request())
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Config(_)), "{err}");
}
