//! The `claude` executor: one long-lived `claude -p` process per task speaking stream-json on
//! stdin/stdout — the prompt and follow-up messages as user lines, permission prompts as
//! `can_use_tool` control requests answered on stdin, an interrupt before the process is
//! stopped. Process handling (group, signals, pause) is the `command` executor's. With homes
//! configured, each run keeps Claude Code's state (`CLAUDE_CONFIG_DIR`: transcripts, shell
//! snapshots, settings) in a home of its own, reused by its `--resume` runs.

mod control;
mod driver;
mod mapping;

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{
    AgentHomes, Capabilities, CommandConfig, CommandExecutor, Executor, MessageFormat, PromptVia,
    Run, RunSpec, RunnerError,
    agent_home::{self, Launcher},
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
    /// Where each run keeps Claude Code's state, when not in the user's shared home.
    pub homes: Option<AgentHomes>,
}

/// Runs tasks with Claude Code.
#[derive(Debug)]
pub struct ClaudeExecutor {
    launcher: Launcher,
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
        let launcher = Launcher {
            process: CommandExecutor::new(base.clone())?,
            homes: config.homes,
        };
        // No run of this executor outlives the process that started it.
        launcher.clear_homes();
        Ok(Self { launcher, base })
    }

    /// Runs `launcher`'s process for `spec` with `prompt` as its first user line, in `home`
    /// (a continued run's) or a new one.
    async fn run(
        launcher: &Launcher,
        spec: RunSpec,
        prompt: &str,
        home: Option<&std::path::Path>,
    ) -> Result<Run, RunnerError> {
        let continuable = spec.continuable;
        let spec = RunSpec {
            prompt: user_line(prompt),
            ..spec
        };
        let spawned = launcher.spawn(&spec, home).await?;
        let discard = agent_home::of_state(&spawned.state).filter(|_| !continuable);
        let shared = Arc::new(driver::Shared::new(spawned.control));
        let events = driver::start(shared.clone(), spawned.events);
        let events = agent_home::discard_at_end(events, discard);
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
        self.launcher.process.unavailable_reason()
    }

    async fn start(&self, spec: RunSpec) -> Result<Run, RunnerError> {
        let prompt = spec.prompt.clone();
        Self::run(&self.launcher, spec, &prompt, None).await
    }

    /// A new `claude -p --resume <session>` process continues the session Claude Code keeps on
    /// disk (`session_id` in `state`, as its init line reported it), in the run's home.
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
        let launcher = Launcher {
            process: CommandExecutor::new(config)?,
            homes: self.launcher.homes.clone(),
        };
        let home = agent_home::of_state(state);
        Self::run(&launcher, spec, prompt, home.as_deref()).await
    }

    async fn abandon(&self, state: &Value) -> Result<(), RunnerError> {
        agent_home::abandon(state).await
    }

    /// Nothing will continue the run: its home goes.
    async fn release(&self, state: &Value) -> Result<(), RunnerError> {
        agent_home::release(state);
        Ok(())
    }
}

/// How long after an interrupt Claude Code gets to end its turn before it is signalled.
pub(crate) const INTERRUPT_GRACE: Duration = Duration::from_millis(500);
