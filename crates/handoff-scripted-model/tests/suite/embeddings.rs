//! OpenAI embeddings, as the OpenAI SDKs call it (base64 unless asked for floats).

use handoff_scripted_model::Api;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{post_json, start};

#[tokio::test]
async fn embeds_as_openai_does_and_logs_the_request() {
    let model = start().await;
    let request = json!({"model": "text-embedding-3-small", "input": ["one", "two"], "encoding_format": "base64"});
    let (status, body) = post_json(&model, "/v1/embeddings", &request).await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][1]["index"], 1);
    // 1536 little-endian f32s = 6144 bytes = 8192 base64 characters.
    assert_eq!(body["data"][0]["embedding"].as_str().unwrap().len(), 8192);
    let (_, again) = post_json(&model, "/v1/embeddings", &request).await;
    assert_eq!(again["data"], body["data"]);

    let (status, error) = post_json(&model, "/v1/embeddings", &json!({"model": "m"})).await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["type"], "invalid_request_error");

    let log = model.requests();
    assert_eq!(log.len(), 3);
    assert!(
        log.iter()
            .all(|r| r.api == Api::Embeddings && r.path == "/v1/embeddings")
    );
    model.shutdown().await;
}
