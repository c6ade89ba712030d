//! The command-line client: `handoff run|tasks|show|logs|diff|files|cancel|pause|resume|
//! message|approve|deny|approvals` speak MCP to a running `handoff serve` (stateless
//! 2026-07-28 requests, results read into `handoff-protocol`'s types).
//!
//! Exit codes: 0 done (for `run --wait`: the task completed), 1 the task did not complete
//! (failed, timed out, cancelled), 2 usage, connection or server errors, 130 interrupted
//! (detached from a task that goes on).

mod approvals;
mod connection;
mod diffstat;
mod error;
mod follow;
mod inspect;
mod instances;
mod logs;
mod render;
mod run;
mod settings;
mod steer;
pub(crate) mod terminal;
mod workdir;

use self::terminal::errln;
use std::process::ExitCode;

use handoff_config::Config;
use handoff_protocol::{TaskId, tasks::ControlAction};

pub use self::error::ClientError;
use self::{connection::Connection, settings::Settings};
use crate::cli::{ClientCommand, Remote};

/// How a client command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done; for `run --wait`, the task completed.
    Ok,
    /// The followed task failed, timed out or was cancelled.
    NotCompleted,
    /// Ctrl-C: the client stopped following a task that goes on.
    Detached,
}

impl Exit {
    fn code(self) -> ExitCode {
        match self {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::NotCompleted => ExitCode::from(1),
            Exit::Detached => ExitCode::from(130),
        }
    }
}

/// Runs one client command; its exit code (errors are printed, exit 2).
pub fn main(config: &Config, command: ClientCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            errln!("handoff: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(dispatch(config, command)) {
        Ok(exit) => exit.code(),
        Err(error) => {
            errln!("handoff: {error}");
            ExitCode::from(2)
        }
    }
}

async fn dispatch(config: &Config, command: ClientCommand) -> Result<Exit, ClientError> {
    use ClientCommand as C;
    let conn = connect(remote(&command), config)?;
    match &command {
        C::Run(args) => run::run(&conn, args).await,
        C::Tasks(args) => inspect::tasks(&conn, args).await,
        C::Show(args) => inspect::show(&conn, args).await,
        C::Logs(args) => logs::logs(&conn, args).await,
        C::Diff(args) => workdir::diff(&conn, args).await,
        C::Files(args) => workdir::files(&conn, args).await,
        C::Cancel(args) => steer::control(&conn, ControlAction::Cancel, args).await,
        C::Pause(args) => steer::control(&conn, ControlAction::Pause, args).await,
        C::Resume(args) => steer::control(&conn, ControlAction::Resume, args).await,
        C::Message(args) => steer::message(&conn, args).await,
        C::Approve(args) => steer::approve(&conn, args).await,
        C::Deny(args) => steer::deny(&conn, args).await,
        C::Approvals(args) => approvals::approvals(&conn, args).await,
        C::Instances(args) => instances::instances(&conn, args).await,
    }
}

fn remote(command: &ClientCommand) -> &Remote {
    use ClientCommand as C;
    match command {
        C::Run(a) => &a.remote,
        C::Tasks(a) => &a.remote,
        C::Show(a) => &a.remote,
        C::Logs(a) => &a.remote,
        C::Diff(a) => &a.remote,
        C::Files(a) => &a.remote,
        C::Cancel(a) | C::Pause(a) | C::Resume(a) => &a.remote,
        C::Message(a) => &a.remote,
        C::Approve(a) => &a.remote,
        C::Deny(a) => &a.remote,
        C::Approvals(a) => &a.remote,
        C::Instances(a) => &a.remote,
    }
}

fn connect(remote: &Remote, config: &Config) -> Result<Connection, ClientError> {
    let settings = Settings::resolve(remote, config)?;
    if let Some(agent) = &settings.agent {
        handoff_protocol::AgentId::parse(agent)
            .map_err(|e| ClientError::Usage(format!("--agent: {e}")))?;
    }
    Connection::new(settings)
}

/// A task id from the command line.
fn task_id(text: &str) -> Result<TaskId, ClientError> {
    TaskId::parse(text.trim())
        .map_err(|e| ClientError::Usage(format!("{e} (`handoff tasks` lists yours)")))
}
