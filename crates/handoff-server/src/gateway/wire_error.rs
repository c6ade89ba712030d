//! The gateway's own refusals, in the shape of the wire the caller speaks, so an agent reads
//! them as it reads its provider's.

use axum::{
    Json,
    response::{IntoResponse, Response},
};
use handoff_llm::CallWire;
use http::StatusCode;
use serde_json::json;

/// A refusal on `wire`: `status`, a machine-readable `kind` and a message for the agent.
pub(crate) fn refusal(wire: CallWire, status: StatusCode, kind: &str, message: &str) -> Response {
    let body = match wire {
        CallWire::Anthropic => json!({
            "type": "error",
            "error": { "type": kind, "message": message },
        }),
        CallWire::OpenAiChat | CallWire::OpenAiResponses => json!({
            "error": { "message": message, "type": kind, "code": kind, "param": null },
        }),
    };
    (status, Json(body)).into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_wire_gets_its_own_error_shape() {
        let read = |response: Response| async move {
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .unwrap();
            serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
        };
        let openai = refusal(
            CallWire::OpenAiChat,
            StatusCode::PAYMENT_REQUIRED,
            "budget_exhausted",
            "spent",
        );
        assert_eq!(openai.status(), StatusCode::PAYMENT_REQUIRED);
        assert_eq!(read(openai).await["error"]["code"], "budget_exhausted");
        let anthropic = refusal(
            CallWire::Anthropic,
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "no",
        );
        let body = read(anthropic).await;
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "authentication_error");
    }
}
