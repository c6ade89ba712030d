//! The `claude` executor: one long-lived `claude -p` process per task speaking stream-json on
//! stdin/stdout — the prompt and follow-up messages as user lines, permission prompts as
//! `can_use_tool` control requests answered on stdin, an interrupt before the process is
//! stopped. Process handling (group, signals, pause) is the `command` executor's.

mod control;
mod driver;
mod mapping;

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{
    Capabilities, CommandConfig, CommandExecutor, Executor, MessageFormat, PromptVia, Run, RunSpec,
    RunnerError, command::abandon_state,
};

/// The executor's name.
pub const NAME: &str = "claude";

/// How the `claude` executor runs Claude Code.
#[derive(Debug, Clone)]
pub struct ClaudeConfig {
    /// The `claude` program.
    pub binary: String,
    /// `--model`, when set.
    pub model: Option<String>,
    /// Provider retries Claude Code makes before it gives up (`CLAUDE_CODE_MAX_RETRIES`).
    pub max_retries: u32,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// How its processes are confined.
    pub isolation: Option<crate::Isolation>,
}

/// Runs tasks with Claude Code.
#[derive(Debug)]
pub struct ClaudeExecutor {
    process: CommandExecutor,
    /// The process settings, for the `--resume` runs that continue a session.
    base: CommandConfig,
}

impl ClaudeExecutor {
    /// An executor for `config`.
    pub fn new(config: ClaudeConfig) -> Result<Self, RunnerError> {
        let mut argv = vec![
            config.binary,
            "-p".to_owned(),
            "--input-format".to_owned(),
            "stream-json".to_owned(),
            "--output-format".to_owned(),
            "stream-json".to_owned(),
            "--verbose".to_owned(),
            "--permission-prompt-tool".to_owned(),
            "stdio".to_owned(),
            "--permission-mode".to_owned(),
            "default".to_owned(),
        ];
        if let Some(model) = config.model {
            argv.extend(["--model".to_owned(), model]);
        }
        let mut env = vec![
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_owned(),
                "1".to_owned(),
            ),
            ("DISABLE_AUTOUPDATER".to_owned(), "1".to_owned()),
            ("DISABLE_TELEMETRY".to_owned(), "1".to_owned()),
            (
                "CLAUDE_CODE_MAX_RETRIES".to_owned(),
                config.max_retries.to_string(),
            ),
        ];
        env.extend(config.env);
        let base = CommandConfig {
            argv,
            prompt_via: PromptVia::Stdin,
            messages_via_stdin: true,
            env,
            message_format: MessageFormat::Raw,
            isolation: config.isolation.clone(),
        };
        let process = CommandExecutor::new(base.clone())?;
        Ok(Self { process, base })
    }

    /// Runs `process` for `spec` with `prompt` as its first user line.
    async fn run(
        process: &CommandExecutor,
        spec: RunSpec,
        prompt: &str,
    ) -> Result<Run, RunnerError> {
        let spec = RunSpec {
            prompt: user_line(prompt),
            ..spec
        };
        let spawned = process.spawn(&spec).await?;
        let shared = Arc::new(driver::Shared::new(spawned.control));
        let events = driver::start(shared.clone(), spawned.events);
        Ok(Run {
            events,
            control: Box::new(control::ClaudeControl::new(shared)),
            state: Some(spawned.state),
        })
    }
}

/// One user message as a stream-json input line.
pub(crate) fn user_line(text: &str) -> String {
    json!({
        "type": "user",
        "session_id": "",
        "parent_tool_use_id": null,
        "message": { "role": "user", "content": [{ "type": "text", "text": text }] },
    })
    .to_string()
}

#[async_trait]
impl Executor for ClaudeExecutor {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            messages: true,
            pause: true,
            reattach: false,
        }
    }

    fn unavailable(&self) -> Option<String> {
        self.process.unavailable_reason()
    }

    async fn start(&self, spec: RunSpec) -> Result<Run, RunnerError> {
        let prompt = spec.prompt.clone();
        Self::run(&self.process, spec, &prompt).await
    }

    /// A new `claude -p --resume <session>` process continues the session Claude Code keeps on
    /// disk (`session_id` in `state`, as its init line reported it).
    async fn resume(&self, spec: RunSpec, state: &Value, prompt: &str) -> Result<Run, RunnerError> {
        let session = state
            .get("session_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| RunnerError::Io {
                context: "continuing the Claude Code session",
                message: "the run reported no session id".to_owned(),
            })?;
        let mut config = self.base.clone();
        config
            .argv
            .extend(["--resume".to_owned(), session.to_owned()]);
        let process = CommandExecutor::new(config)?;
        Self::run(&process, spec, prompt).await
    }

    async fn abandon(&self, state: &Value) -> Result<(), RunnerError> {
        abandon_state(state).await
    }
}

/// How long after an interrupt Claude Code gets to end its turn before it is signalled.
pub(crate) const INTERRUPT_GRACE: Duration = Duration::from_millis(500);
