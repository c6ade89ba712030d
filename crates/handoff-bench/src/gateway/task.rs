//! The task whose run holds the gateway token the bench calls with, got the way an agent gets
//! it: a `command` task writes its `$OPENAI_API_KEY` and `$OPENAI_BASE_URL` to a file in its
//! directory, then waits until the bench leaves another file there, so the token lives exactly
//! as long as the measurement and the task then completes.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use handoff_scripted_model::ScriptedModel;
use serde_json::json;

use super::call::{Endpoint, PROVIDER_KEY};
use crate::{BenchError, client::McpClient};

/// The file the task writes its variables to.
const ENV_FILE: &str = "gateway-bench.env";
/// The file that ends the task.
const DONE_FILE: &str = "gateway-bench.done";
/// The variable `handoff serve` reads the provider key from (never given to a task).
const KEY_ENV: &str = "BENCH_PROVIDER_KEY";
/// How long the task may take to start and write its variables.
const START_LIMIT: Duration = Duration::from_secs(60);

/// `handoff serve`'s settings: the `command` executor running its prompt with bash, the
/// scripted model as the provider behind the gateway, a price so each call's cost is counted.
pub(super) fn server_env(model: &ScriptedModel) -> Vec<(&'static str, String)> {
    vec![
        (
            "HANDOFF_COMMAND_ARGV",
            r#"["bash", "-c", "{prompt}"]"#.to_owned(),
        ),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument".to_owned()),
        ("HANDOFF_DEFAULT_EXECUTOR", "command".to_owned()),
        // The gateway's path does not depend on the level; `process` runs on every host.
        ("HANDOFF_ISOLATION", "process".to_owned()),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0".to_owned()),
        ("HANDOFF_MODELS_PROVIDER_URL", model.openai_base_url()),
        ("HANDOFF_MODELS_PROVIDER_WIRE", "openai".to_owned()),
        ("HANDOFF_MODELS_PROVIDER_KEY_ENV", KEY_ENV.to_owned()),
        (KEY_ENV, PROVIDER_KEY.to_owned()),
        ("HANDOFF_MODELS_GATEWAY", "true".to_owned()),
        ("HANDOFF_MODELS_PRICE_INPUT", "2".to_owned()),
        ("HANDOFF_MODELS_PRICE_OUTPUT", "10".to_owned()),
    ]
}

/// The running task and the gateway endpoint its token opens.
pub(super) struct TokenTask {
    id: String,
    dir: PathBuf,
    /// The gateway's chat completions URL and the task's token.
    pub endpoint: Endpoint,
}

impl TokenTask {
    /// Submits the task and waits until it has written its variables.
    pub(super) async fn start(client: &mut McpClient) -> Result<Self, BenchError> {
        let script = format!(
            "printf '%s\\n%s\\n' \"$OPENAI_API_KEY\" \"$OPENAI_BASE_URL\" > {ENV_FILE}.tmp \
             && mv {ENV_FILE}.tmp {ENV_FILE}; \
             while [ ! -e {DONE_FILE} ]; do sleep 0.2; done"
        );
        let submitted = client
            .tool(
                "execute_task",
                json!({
                    "task_description": script,
                    "timeout_ms": 3_600_000,
                    // An empty budget: no cap of the server's applies, so no call is refused.
                    "completion": {"policy": "none", "budget": {}}
                }),
            )
            .await
            .map_err(BenchError::Setup)?;
        let id = submitted["task_id"]
            .as_str()
            .ok_or_else(|| BenchError::Setup(format!("execute_task answered {submitted}")))?
            .to_owned();
        let (dir, written) = wait_written(client, &id).await?;
        let mut lines = written.lines();
        let (Some(token), Some(base)) = (lines.next(), lines.next()) else {
            return Err(BenchError::Setup(format!(
                "the task wrote {written:?}, not a token and a URL"
            )));
        };
        if !token.starts_with("hmt1_") || !base.starts_with("http") {
            return Err(BenchError::Setup(format!(
                "the task was given no gateway token (OPENAI_API_KEY {}…, OPENAI_BASE_URL {base:?})",
                token.chars().take(5).collect::<String>()
            )));
        }
        let endpoint = Endpoint {
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            key: token.to_owned(),
        };
        Ok(Self { id, dir, endpoint })
    }

    /// Lets the task end, and waits until it has completed.
    pub(super) async fn end(self, client: &mut McpClient) -> Result<(), BenchError> {
        std::fs::write(self.dir.join(DONE_FILE), b"").map_err(|source| BenchError::Io {
            context: "ending the gateway task",
            source,
        })?;
        crate::executors::wait_completed(client, &self.id).await?;
        Ok(())
    }
}

/// Polls task `id` until its directory holds the variables file; the directory and the file.
async fn wait_written(client: &mut McpClient, id: &str) -> Result<(PathBuf, String), BenchError> {
    let deadline = Instant::now() + START_LIMIT;
    loop {
        let status = client
            .tool("get_task_status", json!({"task_id": id}))
            .await
            .map_err(BenchError::Setup)?;
        if let Some(dir) = status["workdir"].as_str().map(PathBuf::from)
            && let Ok(written) = std::fs::read_to_string(dir.join(ENV_FILE))
        {
            return Ok((dir, written));
        }
        let ended = matches!(
            status["status"].as_str(),
            Some("completed" | "failed" | "cancelled" | "timeout")
        );
        if ended || Instant::now() > deadline {
            return Err(BenchError::Setup(format!(
                "the gateway task wrote no {ENV_FILE}: {status}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
