//! The `opencode-cli` executor: one `opencode run --format json` process per task (optionally
//! `--attach`ed to a running server). Its JSON lines carry the same parts as the server's event
//! stream, so they are read by the same mapping. No follow-up messages (the CLI takes one
//! prompt) and no permission relay (the CLI rejects what would need asking); the process is
//! handled by the `command` executor (group, signals, pause).

use std::path::PathBuf;

use async_trait::async_trait;
use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::mapping::{SessionEvents, Signal};
use crate::{
    AgentHomes, Capabilities, CommandConfig, CommandExecutor, Executor, MessageFormat,
    OutputStream, PromptVia, Run, RunEvent, RunOutcome, RunSpec, RunnerError,
    agent_home::{self, Launcher},
};

/// The executor's name.
pub const CLI_NAME: &str = "opencode-cli";

/// How the `opencode-cli` executor runs OpenCode.
#[derive(Debug, Clone)]
pub struct OpenCodeCliConfig {
    /// The `opencode` program.
    pub binary: String,
    /// `provider/model`, when set.
    pub model: Option<String>,
    /// Run against this server (`--attach`) instead of starting one per task.
    pub attach: Option<String>,
    /// Extra environment (config, state directories).
    pub env: Vec<(String, String)>,
    /// How its processes are confined.
    pub isolation: Option<crate::Isolation>,
    /// Where each run keeps OpenCode's database and logs (its sessions): a home of its own,
    /// so no task's shell reads another's conversation and no two runs migrate one database.
    pub homes: Option<AgentHomes>,
}

/// Runs each task as `opencode run --format json`.
#[derive(Debug)]
pub struct OpenCodeCliExecutor {
    launcher: Launcher,
}

impl OpenCodeCliExecutor {
    /// An executor for `config`.
    pub fn new(config: OpenCodeCliConfig) -> Result<Self, RunnerError> {
        let mut argv = vec![
            config.binary,
            "run".to_owned(),
            "--format".to_owned(),
            "json".to_owned(),
        ];
        if let Some(model) = config.model {
            argv.extend(["--model".to_owned(), model]);
        }
        if let Some(url) = config.attach {
            argv.extend(["--attach".to_owned(), url]);
        }
        // `--` so a prompt starting with a dash is not taken for a flag.
        argv.extend(["--".to_owned(), "{prompt}".to_owned()]);
        let process = CommandExecutor::new(CommandConfig {
            argv,
            prompt_via: PromptVia::Argument,
            messages_via_stdin: false,
            env: config.env,
            message_format: MessageFormat::Raw,
            isolation: config.isolation.clone(),
        })?;
        let launcher = Launcher {
            process,
            homes: config.homes,
        };
        // No run of this executor outlives the process that started it.
        launcher.clear_homes();
        Ok(Self { launcher })
    }
}

#[async_trait]
impl Executor for OpenCodeCliExecutor {
    fn name(&self) -> &str {
        CLI_NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            messages: false,
            pause: true,
            reattach: false,
        }
    }

    fn unavailable(&self) -> Option<String> {
        self.launcher.process.unavailable_reason()
    }

    async fn start(&self, spec: RunSpec) -> Result<Run, RunnerError> {
        let spawned = self.launcher.spawn(&spec, None).await?;
        let home = agent_home::of_state(&spawned.state);
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(translate(spawned.events, tx, home));
        Ok(Run {
            events: rx,
            control: Box::new(spawned.control),
            state: Some(spawned.state),
        })
    }

    async fn abandon(&self, state: &Value) -> Result<(), RunnerError> {
        agent_home::abandon(state).await
    }
}

/// Reads the CLI's JSON lines as task events; the process's exit ends the run, and its home
/// goes before the end is told (nothing continues an `opencode run`).
async fn translate(
    mut inner: mpsc::Receiver<RunEvent>,
    tx: mpsc::Sender<RunEvent>,
    home: Option<PathBuf>,
) {
    let mut reader: Option<SessionEvents> = None;
    let mut answer = None;
    let mut error = None;
    while let Some(event) = inner.recv().await {
        let RunEvent::Output {
            stream: OutputStream::Stdout,
            line,
        } = &event
        else {
            if let RunEvent::Finished(outcome) = event {
                if let Some(home) = home {
                    let _ = tokio::task::spawn_blocking(move || agent_home::remove(&home)).await;
                }
                let _ = tx
                    .send(RunEvent::Finished(finish(outcome, answer, error)))
                    .await;
                return;
            }
            let _ = tx.send(event).await;
            continue;
        };
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            let _ = tx.send(event).await;
            continue;
        };
        let session = value.get("sessionID").and_then(Value::as_str).unwrap_or("");
        let reader = reader.get_or_insert_with(|| SessionEvents::new(session));
        if value.get("type").and_then(Value::as_str) == Some("error") {
            let message = error_message(&value);
            let _ = tx
                .send(RunEvent::Event(NewEvent::new(
                    EventKind::Error,
                    message.clone(),
                )))
                .await;
            error = Some(message);
            continue;
        }
        let Some(part) = value.get("part") else {
            continue;
        };
        // The same part objects the server streams as `message.part.updated`.
        let wrapped = json!({ "type": "message.part.updated",
            "properties": { "sessionID": session, "part": part } });
        for signal in reader.read(&wrapped) {
            match signal {
                Signal::Event(e) => {
                    let _ = tx.send(RunEvent::Event(e)).await;
                }
                Signal::Answer(text) => answer = Some(text),
                _ => {}
            }
        }
    }
}

fn error_message(value: &Value) -> String {
    let error = value.get("error").unwrap_or(&Value::Null);
    let name = error.get("name").and_then(Value::as_str).unwrap_or("Error");
    let message = error
        .pointer("/data/message")
        .or_else(|| error.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("unknown error");
    format!("{name}: {message}")
}

fn finish(outcome: RunOutcome, answer: Option<String>, error: Option<String>) -> RunOutcome {
    match error {
        // `opencode run` exits 1 after an error; its message says more than the exit code.
        Some(message) if outcome.error.as_deref() != Some("cancelled") => RunOutcome {
            success: false,
            error: Some(message),
            output: answer,
            ..outcome
        },
        _ => RunOutcome {
            output: answer,
            ..outcome
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn json_lines_become_events_and_errors_fail_the_run_and_the_home_goes_first() {
        let homes = tempfile::tempdir().unwrap();
        let home = homes.path().join("task_x-r1");
        std::fs::create_dir_all(home.join("data/opencode")).unwrap();
        let (inner_tx, inner_rx) = mpsc::channel(16);
        let (tx, mut rx) = mpsc::channel(16);
        tokio::spawn(translate(inner_rx, tx, Some(home.clone())));
        let line = |v: Value| RunEvent::Output {
            stream: OutputStream::Stdout,
            line: v.to_string(),
        };
        let sends = [
            line(json!({"type": "tool_use", "sessionID": "ses_1", "part": {
                "id": "p1", "type": "tool", "tool": "write", "callID": "c1",
                "state": {"status": "completed", "title": "a.txt", "input": {}}}})),
            line(json!({"type": "text", "sessionID": "ses_1", "part": {
                "id": "p2", "type": "text", "text": "Done.", "time": {"start": 1, "end": 2}}})),
            line(json!({"type": "error", "sessionID": "ses_1", "error": {
                "name": "APIError", "data": {"message": "bad request"}}})),
            RunEvent::Finished(RunOutcome {
                error: Some("exit code 1".to_owned()),
                ..RunOutcome::default()
            }),
        ];
        for event in sends {
            inner_tx.send(event).await.unwrap();
        }
        let mut got = Vec::new();
        while let Some(event) = rx.recv().await {
            if matches!(event, RunEvent::Finished(_)) {
                assert!(
                    !home.exists(),
                    "the run's home is gone before its end is told"
                );
            }
            got.push(event);
        }
        let RunEvent::Event(tool) = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!(tool.message, "write completed: a.txt");
        let Some(RunEvent::Finished(outcome)) = got.last() else {
            panic!("{got:?}")
        };
        assert!(!outcome.success);
        assert_eq!(outcome.error.as_deref(), Some("APIError: bad request"));
        assert_eq!(outcome.output.as_deref(), Some("Done."));
    }
}
