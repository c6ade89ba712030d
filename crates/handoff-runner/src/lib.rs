//! Executors: what actually does a task's work. The engine drives every executor through one
//! trait ([`Executor`]): start a run, read its [`RunEvent`]s, and steer it with [`RunControl`]
//! (messages, pause/resume, cancel, answers to the executor's requests). [`CommandExecutor`]
//! runs a configured argv in its own process group; [`OpenCodeExecutor`] runs tasks as sessions
//! of an OpenCode server, [`OpenCodeCliExecutor`] as `opencode run` processes,
//! [`ClaudeExecutor`] as Claude Code stream-json processes, and [`CodexExecutor`] as
//! `codex app-server` JSON-RPC processes, and [`AcpExecutor`] any agent that speaks the Agent
//! Client Protocol, one process per task — taken, when it keeps a pool, from agents started
//! ahead of tasks ([`Executor::claim`]).
//!
//! Runs live in memory; what a restarted Handoff needs to stop them is the state each run hands
//! the engine to store, and — for a run whose state never reached the store — the task id every
//! process carries in its environment ([`TASK_ID_ENV`], see [`stop_task_leftovers`]). The
//! managed OpenCode server is recorded in a file under the data dir before it is spawned.
//! Agents waiting in a pool belong to no task and live in memory only; their empty directories
//! and the agents' homes a killed Handoff left are removed at the next start.
//!
//! Where instances share tasks, [`fence::RunFence`] is each server's dead man's switch: a
//! keeper process that freezes the server's runs once the server stops renewing its deadline.

mod acp;
mod agent_env;
mod agent_home;
mod agent_process;
mod agent_stderr;
mod checks;
mod claude;
mod codex;
mod command;
mod error;
mod executor;
pub mod faults;
pub mod fence;
mod input;
mod isolation;
mod json_lines;
mod leftovers;
mod opencode;
mod process;
mod registry;
#[cfg(test)]
mod test_waits;
mod text;

pub use acp::{
    AcpConfig, AcpExecutor, AgentIdentity as AcpAgentIdentity, Claim, PoolSettings,
    probe as probe_acp_agent,
};
pub use agent_env::AgentEnv;
pub use agent_home::AgentHomes;
pub use checks::{CheckRun, CheckRunner};
pub use claude::{ClaudeConfig, ClaudeExecutor, NAME as CLAUDE};
pub use codex::{CodexConfig, CodexExecutor, NAME as CODEX};
pub use command::{CommandConfig, CommandExecutor, MessageFormat, NAME as COMMAND, PromptVia};
pub use error::RunnerError;
pub use executor::{
    Capabilities, Executor, OutputStream, Run, RunControl, RunEvent, RunOutcome, RunSpec,
};
pub use input::{Decision, InputAnswer, InputKind, InputRequest, Scope};
pub use isolation::Isolation;
pub use leftovers::{TASK_ID_ENV, stop_task_leftovers};
pub use opencode::{
    CLI_NAME as OPENCODE_CLI, NAME as OPENCODE, OpenCodeCliConfig, OpenCodeCliExecutor,
    OpenCodeConfig, OpenCodeExecutor, OpenCodeServer,
};
pub use process::process_group_alive;
pub use registry::ExecutorRegistry;
pub use text::clip;
