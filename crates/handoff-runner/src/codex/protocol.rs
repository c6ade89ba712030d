//! The JSON-RPC lines Handoff writes to `codex app-server`, and the ids it names them by so
//! the answers can be told apart.

use serde_json::{Value, json};

use crate::agent_process::{
    self,
    jsonrpc::{self, request},
};

/// Id of the `initialize` request.
pub(crate) const INITIALIZE: &str = "handoff-initialize";
/// Id of the `config/read` request.
pub(crate) const CONFIG: &str = "handoff-config";
/// Id of the `thread/start` request.
pub(crate) const THREAD: &str = "handoff-thread";
/// Id of a `turn/interrupt` request.
pub(crate) const INTERRUPT: &str = "handoff-interrupt";
/// Prefix of a `turn/start` request's id; the message's client id follows.
pub(crate) const TURN_PREFIX: &str = "handoff-turn:";

/// Codex asks before any command it does not know to be read-only, and before every patch:
/// Handoff's permission policy, not Codex's, decides what runs.
const APPROVAL_POLICY: &str = "untrusted";
/// Codex's own sandbox stays on under Handoff's policy: writes outside the task directory (and
/// its temp dirs) and network access from commands are refused. The model is called by Codex
/// itself, outside the sandbox.
const SANDBOX: &str = "workspace-write";

/// `initialize`, the first line Codex reads.
pub(crate) fn initialize() -> String {
    request(
        INITIALIZE,
        "initialize",
        json!({ "clientInfo": { "name": "handoff", "title": "Handoff",
            "version": env!("CARGO_PKG_VERSION") } }),
    )
}

/// The `initialized` notification that follows the answer to `initialize`.
pub(crate) fn initialized() -> String {
    jsonrpc::notification("initialized", None)
}

/// `config/read`: which model provider the task will use, so its retries can be bounded.
pub(crate) fn config_read(cwd: &str) -> String {
    request(CONFIG, "config/read", json!({ "cwd": cwd }))
}

/// `thread/start` in the task directory, with per-thread config overrides.
pub(crate) fn thread_start(cwd: &str, model: Option<&str>, config: Option<Value>) -> String {
    request(THREAD, "thread/start", thread_params(cwd, model, config))
}

/// `thread/resume` of a thread Codex stored earlier, with the same overrides as a new one.
pub(crate) fn thread_resume(
    thread: &str,
    cwd: &str,
    model: Option<&str>,
    config: Option<Value>,
) -> String {
    let mut params = thread_params(cwd, model, config);
    params["threadId"] = json!(thread);
    request(THREAD, "thread/resume", params)
}

/// The directory, approval policy, sandbox, model and config overrides of a thread.
fn thread_params(cwd: &str, model: Option<&str>, config: Option<Value>) -> Value {
    let mut params = json!({
        "cwd": cwd,
        "approvalPolicy": APPROVAL_POLICY,
        "sandbox": SANDBOX,
    });
    if let Some(model) = model {
        params["model"] = json!(model);
    }
    if let Some(config) = config {
        params["config"] = config;
    }
    params
}

/// `turn/start` with `texts` as one user message. On a thread whose turn is still running,
/// Codex adds the input to that turn instead (it reaches the model at its next step).
pub(crate) fn turn_start(thread: &str, client_id: &str, texts: &[String]) -> String {
    let input = agent_process::text_blocks(texts);
    request(
        &format!("{TURN_PREFIX}{client_id}"),
        "turn/start",
        json!({ "threadId": thread, "input": input, "clientUserMessageId": client_id }),
    )
}

/// `turn/interrupt` of the running turn.
pub(crate) fn interrupt(thread: &str, turn: &str) -> String {
    request(
        INTERRUPT,
        "turn/interrupt",
        json!({ "threadId": thread, "turnId": turn }),
    )
}

/// Per-thread overrides that bound the provider's retries, from `config/read`'s answer.
/// Only a provider defined in the user's config can be changed: Codex rejects overrides of its
/// built-in providers (`openai`, …), which keep their own bounds.
pub(crate) fn retry_overrides(config: &Value, max_retries: u32) -> Option<(String, Value)> {
    let provider = config
        .get("model_provider")
        .and_then(Value::as_str)
        .unwrap_or("openai");
    config
        .pointer(&format!("/model_providers/{}", pointer_escape(provider)))
        .filter(|p| p.is_object())?;
    let overrides = json!({
        format!("model_providers.{provider}.request_max_retries"): max_retries,
        format!("model_providers.{provider}.stream_max_retries"): max_retries,
    });
    Some((provider.to_owned(), overrides))
}

/// Codex's id for the model gateway's provider.
pub(crate) const GATEWAY_PROVIDER: &str = "handoff";

/// Per-thread overrides that make the thread's provider the model gateway at `url` (the
/// Responses wire; the key is the run's token in `OPENAI_API_KEY`), with its retries bounded.
pub(crate) fn gateway_overrides(url: &str, max_retries: u32) -> (String, Value) {
    let key = |field: &str| format!("model_providers.{GATEWAY_PROVIDER}.{field}");
    let overrides = json!({
        "model_provider": GATEWAY_PROVIDER,
        key("name"): "Handoff model gateway",
        key("base_url"): url,
        key("env_key"): "OPENAI_API_KEY",
        key("wire_api"): "responses",
        key("request_max_retries"): max_retries,
        key("stream_max_retries"): max_retries,
    });
    (GATEWAY_PROVIDER.to_owned(), overrides)
}

fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn retries_are_bounded_only_for_a_custom_provider() {
        let custom =
            json!({"model_provider": "mock", "model_providers": {"mock": {"name": "Mock"}}});
        let (provider, overrides) = retry_overrides(&custom, 2).unwrap();
        assert_eq!(provider, "mock");
        assert_eq!(overrides["model_providers.mock.request_max_retries"], 2);
        assert_eq!(overrides["model_providers.mock.stream_max_retries"], 2);
        let builtin = json!({"model_provider": null, "model_providers": {}});
        assert_eq!(retry_overrides(&builtin, 2), None);
        let (provider, gateway) = gateway_overrides("http://127.0.0.1:9/gateway/openai/v1", 1);
        assert_eq!(provider, "handoff");
        assert_eq!(gateway["model_provider"], "handoff");
        assert_eq!(
            gateway["model_providers.handoff.base_url"],
            "http://127.0.0.1:9/gateway/openai/v1"
        );
        assert_eq!(gateway["model_providers.handoff.env_key"], "OPENAI_API_KEY");
    }

    #[test]
    fn turn_start_names_the_message_in_its_id() {
        let line: Value =
            serde_json::from_str(&turn_start("t1", "handoff-3", &["hi".to_owned()])).unwrap();
        assert_eq!(line["id"], "handoff-turn:handoff-3");
        assert_eq!(line["params"]["clientUserMessageId"], "handoff-3");
        assert_eq!(line["params"]["input"][0]["text"], "hi");
    }
}
