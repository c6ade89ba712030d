//! The built-in `command` executor: runs a configured argv in its own process group, streams
//! its output line by line, and makes sure nothing of the group outlives the task.

mod confine;
mod control;
mod io;

mod supervise;
#[cfg(test)]
mod tests;

use std::{path::PathBuf, process::Stdio, sync::Arc};

use async_trait::async_trait;
use handoff_task::{EventKind, NewEvent};
use serde_json::{Value, json};
use tokio::{process::Command, sync::mpsc};

use crate::process;
use crate::{Capabilities, Executor, OutputStream, Run, RunEvent, RunSpec, RunnerError};
pub(crate) use confine::Confinement;
pub(crate) use control::CommandControl;
use control::Shared;

/// The executor's name.
pub const NAME: &str = "command";

/// Room for bursts of output while the engine is busy persisting earlier events.
const EVENT_BUFFER: usize = 256;

/// How the prompt reaches the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptVia {
    /// Written to stdin, followed by a newline.
    #[default]
    Stdin,
    /// Substituted for every `{prompt}` in argv.
    Argument,
}

/// What the `command` executor runs and how it talks to it.
#[derive(Debug, Clone)]
pub struct CommandConfig {
    /// Program and arguments, with `{task_id}`, `{workdir}` and `{prompt}` placeholders.
    pub argv: Vec<String>,
    /// How the prompt reaches the program.
    pub prompt_via: PromptVia,
    /// Keep stdin open and deliver each message as one JSON line on it.
    pub messages_via_stdin: bool,
    /// Variables added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// How a message is written to stdin.
    pub message_format: MessageFormat,
    /// How the process is confined (`None`: own process group only).
    pub isolation: Option<crate::Isolation>,
}

/// How messages are written to the process's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MessageFormat {
    /// `{"type":"message","message":…}`, one line each.
    #[default]
    JsonLine,
    /// The message as given (already one line of the program's own protocol).
    Raw,
}

/// A started process, with its concrete control handle (executors built on this one need more
/// than [`RunControl`] offers, such as closing stdin).
pub(crate) struct Spawned {
    pub events: mpsc::Receiver<RunEvent>,
    pub control: CommandControl,
    pub state: serde_json::Value,
}

/// Runs [`CommandConfig::argv`] for each task.
#[derive(Debug, Clone)]
pub struct CommandExecutor {
    config: CommandConfig,
}

impl CommandExecutor {
    /// An executor for `config`; an empty argv is rejected.
    pub fn new(config: CommandConfig) -> Result<Self, RunnerError> {
        if config.argv.is_empty() {
            return Err(RunnerError::NotConfigured {
                executor: NAME.to_owned(),
                message: "argv is empty; set the program to run".to_owned(),
            });
        }
        Ok(Self { config })
    }

    fn argv_for(&self, spec: &RunSpec) -> Vec<String> {
        let workdir = spec.workdir.to_string_lossy();
        let mut values = vec![
            ("{task_id}", spec.task_id.as_str()),
            ("{workdir}", workdir.as_ref()),
        ];
        if self.config.prompt_via == PromptVia::Argument {
            values.push(("{prompt}", spec.prompt.as_str()));
        }
        self.config
            .argv
            .iter()
            .map(|arg| substitute(arg, &values))
            .collect()
    }
}

#[async_trait]
impl Executor for CommandExecutor {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            messages: self.config.messages_via_stdin,
            pause: true,
            reattach: false,
        }
    }

    fn unavailable(&self) -> Option<String> {
        self.unavailable_reason()
    }

    async fn start(&self, spec: RunSpec) -> Result<Run, RunnerError> {
        let spawned = self.spawn(&spec).await?;
        Ok(Run {
            events: spawned.events,
            control: Box::new(spawned.control),
            state: Some(spawned.state),
        })
    }

    async fn abandon(&self, state: &Value) -> Result<(), RunnerError> {
        abandon_state(state).await
    }
}

impl CommandExecutor {
    /// This executor with `env` added and `dir` writable in its sandbox (an agent's own state).
    pub(crate) fn with_state_dir(&self, env: Vec<(String, String)>, dir: PathBuf) -> Self {
        let mut config = self.config.clone();
        config.env.extend(env);
        if let Some(isolation) = config.isolation.as_mut() {
            isolation.config.writable.push(dir);
        }
        Self { config }
    }

    /// Why this host cannot confine the process as configured.
    pub(crate) fn unavailable_reason(&self) -> Option<String> {
        let isolation = self.config.isolation.as_ref()?;
        isolation
            .isolator
            .check(&isolation.config)
            .err()
            .map(|e| e.to_string())
    }

    /// The command for `argv`: confined when the executor is isolated, else in its own group.
    fn command(
        &self,
        spec: &RunSpec,
        argv: &[String],
    ) -> Result<(Command, Confinement), RunnerError> {
        let mut env = self.config.env.clone();
        env.extend(spec.env.iter().cloned());
        confined_command(
            self.config.isolation.as_ref(),
            spec.task_id.as_str(),
            &spec.run_name(),
            &spec.workdir,
            argv,
            &env,
            &spec.env_hidden,
        )
    }

    /// Starts the process for `spec`.
    pub(crate) async fn spawn(&self, spec: &RunSpec) -> Result<Spawned, RunnerError> {
        let argv = self.argv_for(spec);
        let Some(program) = argv.first() else {
            return Err(RunnerError::NotConfigured {
                executor: NAME.to_owned(),
                message: "argv is empty; set the program to run".to_owned(),
            });
        };
        let prompt_on_stdin = self.config.prompt_via == PromptVia::Stdin;
        let keep_stdin = self.config.messages_via_stdin;

        let level = self
            .config
            .isolation
            .as_ref()
            .map_or("none", |i| i.config.level.as_str());
        let stdin = if prompt_on_stdin || keep_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let (mut command, confined) = self.command(spec, &argv)?;
        command
            .current_dir(&spec.workdir)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(source) => {
                confined.remove().await;
                return Err(RunnerError::Spawn {
                    program: program.clone(),
                    source,
                });
            }
        };
        crate::faults::abort_at(crate::faults::AFTER_SPAWN);
        // `id()` is only `None` once the child was reaped, and nothing has waited on it yet.
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| RunnerError::Io {
                context: "starting the process",
                message: "the process has no usable pid".to_owned(),
            })?;
        let start_time = process::start_time(pid);
        if start_time.is_none() {
            tracing::warn!(
                pid,
                "could not read the process start time; abandon will not kill it"
            );
        }

        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        let started = NewEvent::new(EventKind::Log, "process started")
            .with_data(json!({ "pid": pid, "argv0": program, "isolation": level }));
        // The channel is fresh and the receiver is still here, so this cannot block or fail.
        let _ = tx.send(RunEvent::Event(started)).await;

        // Recorded so that abandoning stops this run's group, whatever the task's later runs use.
        let cgroup_name = confined.cgroup.as_ref().map(|_| spec.run_name());
        let shared = Arc::new(Shared::new(
            pid,
            child.stdin.take(),
            keep_stdin,
            self.config.message_format,
            confined,
        ));
        if prompt_on_stdin {
            shared.write_prompt(spec.prompt.clone(), keep_stdin);
        }
        let mut readers = Vec::with_capacity(2);
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(io::forward_lines(
                out,
                OutputStream::Stdout,
                tx.clone(),
            )));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(io::forward_lines(
                err,
                OutputStream::Stderr,
                tx.clone(),
            )));
        }
        tokio::spawn(supervise::supervise(
            child,
            Arc::clone(&shared),
            readers,
            tx,
        ));

        Ok(Spawned {
            events: rx,
            control: CommandControl::new(shared),
            state: json!({ "pgid": pid, "start_time": start_time, "cgroup": cgroup_name }),
        })
    }
}

/// Kills what is left of a run recorded as `{pgid, start_time, cgroup}`: its whole cgroup when
/// it had one (named by the run, so it cannot be another run's — also not a later run of the
/// same task; rows older than that name the task), else its process group.
pub(crate) async fn abandon_state(state: &Value) -> Result<(), RunnerError> {
    if let Some(name) = state
        .get("cgroup")
        .and_then(Value::as_str)
        .map(str::to_owned)
    {
        let emptied = tokio::task::spawn_blocking(move || {
            let support = handoff_isolation::cgroups::CgroupSupport::detect();
            handoff_isolation::cgroups::TaskCgroup::open(&support, &name)
                .map(|group| group.remove())
        })
        .await
        .map_err(|e| RunnerError::Isolation(e.to_string()))?;
        if let Some(Err(e)) = emptied {
            tracing::warn!(error = %e, "could not empty an abandoned run's cgroup");
        }
    }
    let pgid = state
        .get("pgid")
        .and_then(Value::as_i64)
        .and_then(|p| i32::try_from(p).ok());
    let start_time = state.get("start_time").and_then(Value::as_u64);
    let (Some(pgid), Some(start_time)) = (pgid, start_time) else {
        tracing::warn!(%state, "not abandoning a run whose state lacks pgid or start_time");
        return Ok(());
    };
    process::abandon_group(pgid, start_time).await
}

/// Replaces placeholders in one pass, so a value that itself contains `{workdir}` (a prompt,
/// say) is passed through untouched.
fn substitute(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    'scan: while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let candidate = &rest[open..];
        for (placeholder, value) in values {
            if let Some(after) = candidate.strip_prefix(placeholder) {
                out.push_str(value);
                rest = after;
                continue 'scan;
            }
        }
        out.push('{');
        rest = &candidate[1..];
    }
    out.push_str(rest);
    out
}

/// The command for `argv` of task `task_id` in its directory: confined by `isolation` when
/// given (in cgroup `run`, a name of this run's own), else in its own process group. `env` is
/// added to what the isolation lets through; `hidden` variables are never passed.
pub(crate) fn confined_command(
    isolation: Option<&crate::Isolation>,
    task_id: &str,
    run: &str,
    workdir: &std::path::Path,
    argv: &[String],
    extra_env: &[(String, String)],
    hidden: &[String],
) -> Result<(Command, Confinement), RunnerError> {
    // Node-based agents take their directory from PWD when it is set; ours is not theirs. The
    // task id is how a restarted Handoff finds the run's processes when their pid was never
    // recorded (see `leftovers`).
    let mut env = vec![
        ("PWD".to_owned(), workdir.display().to_string()),
        (crate::TASK_ID_ENV.to_owned(), task_id.to_owned()),
    ];
    env.extend(extra_env.iter().cloned());
    let Some(isolation) = isolation else {
        let mut command = Command::new(argv.first().map_or("", String::as_str));
        command
            .args(argv.iter().skip(1))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .process_group(0);
        for name in hidden {
            command.env_remove(name);
        }
        return Ok((command, Confinement::default()));
    };
    let mut prepared = isolation.prepare(run, workdir, argv, &env)?;
    prepared
        .env
        .retain(|(k, _)| !hidden.iter().any(|h| std::ffi::OsStr::new(h) == k));
    let mut command = Command::new(&prepared.program);
    command.args(&prepared.args);
    if prepared.env_clear {
        command.env_clear();
    }
    command.envs(prepared.env.iter().map(|(k, v)| (k, v)));
    for name in hidden.iter().filter(|_| !prepared.env_clear) {
        command.env_remove(name);
    }
    // The launcher makes itself a session (and group) leader: same id as its pid.
    if !prepared.own_session {
        command.process_group(0);
    }
    let confined = Confinement {
        cgroup: prepared.cgroup.map(Arc::new),
        container: prepared
            .container
            .map(|name| (isolation.isolator.docker().to_owned(), name)),
    };
    Ok((command, confined))
}
