//! Command-line interface.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use handoff_config::CliOverride;
use handoff_protocol::ObserverId;

/// Handoff: hand development tasks from AI agents to coding agents over MCP.
#[derive(Debug, Parser)]
#[command(name = "handoff", version, about)]
pub struct Cli {
    /// Config file (default: ./handoff.toml when present).
    #[arg(long, global = true, env = "HANDOFF_CONFIG")]
    pub config: Option<PathBuf>,

    /// Log format: auto (text on a terminal, else JSON), text or json.
    #[arg(long, global = true)]
    pub log_format: Option<String>,

    /// Log level: error, warn, info, debug or trace.
    #[arg(long, global = true)]
    pub log_level: Option<String>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server (HTTP at /mcp, or stdio with --stdio).
    Serve(ServeArgs),
    /// Print the effective configuration, where each value came from, secrets masked.
    Config {
        /// Print JSON instead of annotated TOML-like lines.
        #[arg(long)]
        json: bool,
    },
    /// Write a commented handoff.toml: every setting at its default, and a provider example.
    Init(InitArgs),
    /// Check what this configuration needs on this machine and say how to fix what is missing.
    Doctor {
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Measure Handoff against a no-MCP floor server in one run (prints a table).
    Bench(BenchArgs),
    /// Letta: connect this Handoff to a Letta server's agents.
    Letta {
        /// What to do with Letta.
        #[command(subcommand)]
        command: LettaCommand,
    },
    /// The floor server `handoff bench` measures against (started by it).
    #[command(hide = true)]
    BenchFloor {
        /// A JSON file from `tools/list` or `tools/call <tool>` to the result to answer with.
        #[arg(long)]
        answers: Option<std::path::PathBuf>,
    },
    /// Client commands: talk to a running `handoff serve` over MCP.
    #[command(flatten)]
    Client(ClientCommand),
}

/// Commands that speak MCP to a running server (`--url`, token from `HANDOFF_TOKEN` or
/// `client.toml`).
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Hand a task to a coding agent; on a terminal, follow it live to its end.
    Run(RunArgs),
    /// Your tasks, newest first (a table).
    Tasks(TasksArgs),
    /// Where one task stands: state, times, pending requests, the agent's answer.
    Show(ShowArgs),
    /// A task's events (-f: follow it until it ends).
    Logs(LogsArgs),
    /// The diff of a task's changes.
    Diff(DiffArgs),
    /// List a task's working directory, or print one of its files.
    Files(FilesArgs),
    /// Cancel a task (for good).
    Cancel(ControlArgs),
    /// Pause a running task.
    Pause(ControlArgs),
    /// Resume a paused task.
    Resume(ControlArgs),
    /// Tell a task's coding agent something; a finished task is continued in a follow-up round.
    Message(MessageArgs),
    /// Allow what a task waiting for a permission asks.
    Approve(ApproveArgs),
    /// Refuse what a task waiting for a permission asks.
    Deny(DenyArgs),
    /// Permission requests waiting for you, and your standing approvals.
    Approvals(ApprovalsArgs),
    /// The Handoff instances sharing the server's task store, their heartbeats and loads.
    Instances(InstancesArgs),
}

/// Where the client finds the server and whom it acts as.
#[derive(Debug, Clone, Args)]
pub struct Remote {
    /// The server's MCP endpoint (default: client.toml `url`, else
    /// http://127.0.0.1:<server.port>/mcp).
    #[arg(long, env = "HANDOFF_URL")]
    pub url: Option<String>,
    /// The agent to act as, sent as x-agent-id (default: client.toml `agent`; without a token,
    /// auth.default_agent or `cli`). A token bound to an agent decides by itself.
    #[arg(long, env = "HANDOFF_AGENT")]
    pub agent: Option<String>,
}

/// Options of `handoff run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// What the coding agent should do, in plain language.
    pub text: String,
    /// An existing directory to work in (default: a fresh one for the task).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The executor to run it (default: the server's).
    #[arg(long)]
    pub executor: Option<String>,
    /// Who else follows the task: an agent id, or a person in Matrix (`@name:server`, invited
    /// to the task's room when the server has Matrix); repeat for several (at most 16).
    #[arg(long = "observer", value_name = "ID", value_parser = parse_observer)]
    pub observers: Vec<ObserverId>,
    /// If Handoff stops or dies while the task runs, put it back in the queue to run again
    /// from the start instead of failing it (default: the server's tasks.requeue_on_restart).
    #[arg(long)]
    pub requeue_on_restart: bool,
    /// Continue this earlier task of yours instead: TEXT is the follow-up request, and the
    /// task runs another round in its directory, on its branch (follows only the new round).
    #[arg(
        long = "continue",
        value_name = "TASK_ID",
        conflicts_with_all = ["dir", "executor", "observers", "requeue_on_restart"]
    )]
    pub continue_task: Option<String>,
    /// Follow the task to its end: the default, on a terminal or not (kept for scripts that
    /// name it).
    #[arg(long, conflicts_with = "no_wait")]
    pub wait: bool,
    /// Print the task id and return at once.
    #[arg(long)]
    pub no_wait: bool,
    /// Print JSON (the submission, or with --wait the final status) instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff tasks`.
#[derive(Debug, Args)]
pub struct TasksArgs {
    /// Only tasks in this state (queued, running, paused, input_required, completed, failed,
    /// timeout, cancelled).
    #[arg(long)]
    pub status: Option<String>,
    /// How many per page (at most 200).
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// Start after this point: the cursor the previous page ended with.
    #[arg(long, conflicts_with = "all")]
    pub cursor: Option<String>,
    /// Every task, page after page.
    #[arg(long)]
    pub all: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The task.
    pub id: String,
    /// Print JSON instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The task.
    pub id: String,
    /// Keep printing new events until the task ends.
    #[arg(short, long)]
    pub follow: bool,
    /// Every event: also each step of a tool call and the requests the policy allowed (by
    /// default one line per tool call).
    #[arg(long)]
    pub all: bool,
    /// Print JSON (with -f: one event per line) instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The task.
    pub id: String,
    /// Only the diff stat.
    #[arg(long)]
    pub stat: bool,
    /// Only the part of the diff from this byte (a line start), and where the next one starts;
    /// without it the whole diff is printed, part by part.
    #[arg(long, value_name = "BYTES", conflicts_with_all = ["stat", "json"])]
    pub offset: Option<u64>,
    /// Print JSON instead of the diff.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff files`.
#[derive(Debug, Args)]
pub struct FilesArgs {
    /// The task.
    pub id: String,
    /// A directory to list or a file to print, relative to the task's working directory.
    pub path: Option<String>,
    /// Print JSON instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff cancel|pause|resume`.
#[derive(Debug, Args)]
pub struct ControlArgs {
    /// The task.
    pub id: String,
    /// Why (recorded in the task's history).
    #[arg(long)]
    pub reason: Option<String>,
    /// Print JSON instead of a line.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff message`.
#[derive(Debug, Args)]
pub struct MessageArgs {
    /// The task.
    pub id: String,
    /// What to tell its coding agent.
    pub text: String,
    /// The kind of message (update, feedback, context_change, requirement_change,
    /// priority_change, clarification, correction, guidance).
    #[arg(long = "type", default_value = "update")]
    pub kind: String,
    /// Print JSON instead of a line.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// This one request.
    Once,
    /// The same permission and pattern for the rest of the task.
    Task,
    /// The same permission and pattern in every task of yours in the same project, until
    /// revoked.
    Project,
}

/// Options of `handoff approve`.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The task.
    pub id: String,
    /// The request to answer (default: the oldest pending one).
    #[arg(long)]
    pub request: Option<String>,
    /// How far the approval reaches.
    #[arg(long, value_enum, default_value_t = Scope::Once)]
    pub scope: Scope,
    /// With --scope task|project: approve these wildcards instead of the request's own
    /// patterns (repeatable).
    #[arg(long = "pattern")]
    pub patterns: Vec<String>,
    /// Print JSON instead of a line.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff deny`.
#[derive(Debug, Args)]
pub struct DenyArgs {
    /// The task.
    pub id: String,
    /// The request to answer (default: the oldest pending one).
    #[arg(long)]
    pub request: Option<String>,
    /// Why, for the coding agent.
    #[arg(long)]
    pub message: Option<String>,
    /// Print JSON instead of a line.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff instances`.
#[derive(Debug, Args)]
pub struct InstancesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// Options of `handoff approvals`.
#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub remote: Remote,
}

/// `handoff letta …` subcommands.
#[derive(Debug, Subcommand)]
pub enum LettaCommand {
    /// Register this Handoff with Letta and attach its tools to agents; with --remove, detach
    /// and delete what it made. Idempotent: a second run changes nothing and says so.
    Connect(ConnectArgs),
}

/// How Letta reaches Handoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConnectMode {
    /// mcp when server.public_url is set, else native.
    Auto,
    /// Letta's MCP client calls <server.public_url>/mcp (a public address: Letta refuses others).
    Mcp,
    /// Python tools in Letta's tool sandbox call Handoff's /mcp themselves.
    Native,
}

/// Options of `handoff letta connect`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("targets").required(true).args(["agents", "all"])))]
pub struct ConnectArgs {
    /// A Letta agent to connect (agent-<uuid>); repeat for more.
    #[arg(long = "agent", value_name = "ID")]
    pub agents: Vec<String>,
    /// Every agent of the Letta organisation.
    #[arg(long)]
    pub all: bool,
    /// Detach and delete what connect made (its tools, MCP server and agent secrets) instead.
    #[arg(long)]
    pub remove: bool,
    /// How Letta reaches Handoff.
    #[arg(long, value_enum, default_value_t = ConnectMode::Auto)]
    pub mode: ConnectMode,
    /// Names in Letta: MCP server <prefix>, native tools <prefix>_execute_task… (default:
    /// letta.tool_prefix, `handoff`); one per Handoff sharing a Letta organisation.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Native mode: put the gateway token itself in the agents' secrets instead of a token
    /// derived for each agent. Code in their tool sandbox can read it and act as any agent, so
    /// only when every agent on this Letta server is trusted alike.
    #[arg(long)]
    pub allow_gateway_token: bool,
    /// Print one JSON summary instead of a line per action.
    #[arg(long)]
    pub json: bool,
}

/// Options of `handoff init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The file to write.
    #[arg(long, default_value = "handoff.toml")]
    pub path: PathBuf,
    /// Overwrite the file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Set a model provider: an OpenAI-compatible base URL (Ollama, vLLM, llama.cpp, a hosted
    /// /v1 API) for OpenCode and the completion judge.
    #[arg(long, value_name = "URL", requires = "model")]
    pub provider: Option<String>,
    /// The model the provider serves, for every task and the judge.
    #[arg(long, value_name = "NAME", requires = "provider")]
    pub model: Option<String>,
    /// The environment variable holding the provider's API key (none for a keyless local
    /// server); it is read when Handoff starts, never written to the file.
    #[arg(long, value_name = "VAR", requires = "provider")]
    pub key_env: Option<String>,
}

/// Options of `handoff bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A few seconds, only to prove the benchmark works.
    #[arg(long)]
    pub smoke: bool,
    /// Concurrency levels, comma-separated (default 1,16,64,256,1000).
    #[arg(long, value_delimiter = ',')]
    pub clients: Option<Vec<usize>>,
    /// Seconds per load step (default 3).
    #[arg(long)]
    pub step_secs: Option<f64>,
    /// Seconds of soak (default 300).
    #[arg(long)]
    pub soak_secs: Option<u64>,
    /// Instead of the load benchmark: the overhead Handoff adds to these coding agents
    /// (comma-separated: opencode, opencode-acp, claude, codex-acp), against their own CLI in
    /// the same run.
    #[arg(long, value_delimiter = ',')]
    pub executors: Option<Vec<String>>,
    /// Tasks per executor for `--executors` (default 20), per setup for `--instances`
    /// (default 300).
    #[arg(long)]
    pub tasks: Option<usize>,
    /// Instead of the load benchmark: these numbers of instances on one PostgreSQL
    /// (comma-separated, e.g. 1,3) against one instance on SQLite, in the same run. Needs
    /// `--database-url`.
    #[arg(long, value_delimiter = ',', requires = "database_url")]
    pub instances: Option<Vec<usize>>,
    /// A PostgreSQL server `--instances` may create and drop its databases on.
    #[arg(long, env = "HANDOFF_BENCH_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Instead of the load benchmark: what the model gateway adds to streamed model calls
    /// (latency, CPU) against calling the provider directly in the same run, at each
    /// `--clients` level (default 1,16).
    #[arg(long, conflicts_with_all = ["executors", "instances"])]
    pub gateway: bool,
    /// Calls per step for `--gateway`, split over the clients (default 2000; 32 with --smoke).
    #[arg(long, requires = "gateway")]
    pub calls: Option<usize>,
    /// The `opencode` program for `--gateway`'s agent baseline: its own CPU per model call,
    /// which the gateway's CPU per call is set against (default: `opencode` on PATH).
    #[arg(long, value_name = "PATH", requires = "gateway")]
    pub agent_baseline: Option<PathBuf>,
}

/// Options of `handoff serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to bind.
    #[arg(long)]
    pub host: Option<String>,
    /// Port to bind (0 picks a free one).
    #[arg(long)]
    pub port: Option<String>,
    /// Data directory (database, spilled outputs).
    #[arg(long)]
    pub data_dir: Option<String>,
    /// Serve MCP over stdin/stdout instead of HTTP.
    #[arg(long)]
    pub stdio: bool,
    /// Agent identity for stdio callers (HTTP callers use the x-agent-id header).
    #[arg(long, requires = "stdio")]
    pub agent_id: Option<String>,
}

impl Cli {
    /// The flags that override configuration settings, as config layer entries.
    pub fn overrides(&self) -> Vec<CliOverride> {
        let mut out = Vec::new();
        let mut push = |key, flag, value: &Option<String>| {
            if let Some(value) = value {
                out.push(CliOverride {
                    key,
                    flag,
                    value: value.clone(),
                });
            }
        };
        push("log.format", "--log-format", &self.log_format);
        push("log.level", "--log-level", &self.log_level);
        if let Command::Serve(serve) = &self.command {
            push("server.host", "--host", &serve.host);
            push("server.port", "--port", &serve.port);
            push("data_dir", "--data-dir", &serve.data_dir);
        }
        out
    }
}

/// An observer as `--observer` takes it: checked here, so a typo is named before anything is
/// sent.
fn parse_observer(value: &str) -> Result<ObserverId, String> {
    ObserverId::parse(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn letta_connect_needs_agents_or_all_but_not_both() {
        let agent = "agent-00000000-0000-4000-8000-000000000001";
        let cli = Cli::parse_from([
            "handoff", "letta", "connect", "--agent", agent, "--agent", agent,
        ]);
        let Command::Letta {
            command: LettaCommand::Connect(args),
        } = cli.command
        else {
            panic!("not letta connect");
        };
        assert_eq!(args.agents.len(), 2);
        assert_eq!(args.mode, ConnectMode::Auto);
        assert!(Cli::try_parse_from(["handoff", "letta", "connect"]).is_err());
        assert!(
            Cli::try_parse_from(["handoff", "letta", "connect", "--all", "--agent", agent])
                .is_err()
        );
        assert!(
            Cli::try_parse_from([
                "handoff", "letta", "connect", "--all", "--mode", "native", "--remove", "--json"
            ])
            .is_ok()
        );
    }

    #[test]
    fn client_commands_parse_with_their_connection_flags() {
        let cli = Cli::parse_from([
            "handoff",
            "run",
            "fix it",
            "--dir",
            ".",
            "--wait",
            "--url",
            "http://h:1/mcp",
        ]);
        let Command::Client(ClientCommand::Run(run)) = cli.command else {
            panic!("not run");
        };
        assert_eq!(
            (run.text.as_str(), run.wait, run.no_wait),
            ("fix it", true, false)
        );
        assert_eq!(run.remote.url.as_deref(), Some("http://h:1/mcp"));
        assert!(Cli::try_parse_from(["handoff", "run", "x", "--wait", "--no-wait"]).is_err());
        let cli = Cli::parse_from(["handoff", "approve", "task_x", "--scope", "project"]);
        let Command::Client(ClientCommand::Approve(approve)) = cli.command else {
            panic!("not approve");
        };
        assert_eq!(approve.scope, Scope::Project);
        assert!(Cli::try_parse_from(["handoff", "approve", "t", "--scope", "always"]).is_err());
        let cli = Cli::parse_from(["handoff", "logs", "task_x", "-f", "--agent", "me"]);
        let Command::Client(ClientCommand::Logs(logs)) = cli.command else {
            panic!("not logs");
        };
        assert!(logs.follow);
        assert_eq!(logs.remote.agent.as_deref(), Some("me"));
    }

    #[test]
    fn serve_flags_become_overrides() {
        let cli = Cli::parse_from(["handoff", "--log-format", "json", "serve", "--port", "0"]);
        let keys: Vec<_> = cli
            .overrides()
            .iter()
            .map(|o| (o.key, o.value.clone()))
            .collect();
        assert_eq!(
            keys,
            [
                ("log.format", "json".to_owned()),
                ("server.port", "0".to_owned())
            ]
        );
    }
}
