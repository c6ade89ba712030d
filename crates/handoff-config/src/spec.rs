//! The table of every setting: its key, the environment names that set it, whether it is secret.

/// Maps an environment variable's text to a setting's text; `Ok(None)` means "not set by this".
pub type EnvTransform = fn(&str) -> Result<Option<String>, String>;

/// An environment variable that sets a setting, optionally mapping its value first.
#[derive(Debug, Clone, Copy)]
pub struct EnvAlias {
    /// Variable name.
    pub name: &'static str,
    /// Maps the variable's text first, when set.
    pub transform: Option<EnvTransform>,
}

const fn env(name: &'static str) -> EnvAlias {
    EnvAlias {
        name,
        transform: None,
    }
}

/// One configurable setting.
#[derive(Debug, Clone, Copy)]
pub struct SettingSpec {
    /// Dotted key, also its TOML path (`server.port` = `[server] port = …`).
    pub key: &'static str,
    /// Environment variables, first found wins (`HANDOFF_*` before legacy names).
    pub env: &'static [EnvAlias],
    /// Secrets are masked in errors, logs and `handoff config`.
    pub secret: bool,
    /// One line for `docs/configuration.md` and the file `handoff init` writes.
    pub doc: &'static str,
}

impl SettingSpec {
    /// Renders a value for people (messages, `handoff config`): masked whole when the setting
    /// is secret, else with the secrets inside it (JSON keys, URL passwords) masked.
    pub(crate) fn render_raw(&self, value: &str) -> String {
        if self.secret {
            crate::MASK.to_owned()
        } else {
            crate::mask_setting_text(value)
        }
    }
}

/// `DEBUG=true` (the older server's flag) means log level `debug`; `DEBUG=false` leaves it alone.
fn debug_flag(value: &str) -> Result<Option<String>, String> {
    match crate::parse::parse_bool(value)? {
        true => Ok(Some("debug".to_owned())),
        false => Ok(None),
    }
}

/// Settings whose value is a whole TOML table (one entry per name), kept as one value rather
/// than flattened into dotted keys.
pub(crate) const TABLE_SETTINGS: &[&str] = &["executors.acp", "models.providers"];

macro_rules! settings {
    ($( $key:literal [$($env:expr),*] $(secret=$secret:literal)? : $doc:literal ;)*) => {
        /// Every setting Handoff reads, in display order.
        pub const SETTINGS: &[SettingSpec] = &[
            $(SettingSpec {
                key: $key,
                env: &[$($env),*],
                secret: settings!(@secret $($secret)?),
                doc: $doc,
            },)*
        ];
    };
    (@secret) => { false };
    (@secret $s:literal) => { $s };
}

settings! {
    "server.host" [env("HANDOFF_HOST"), env("MCP_HOST")]: "address to bind the HTTP server to";
    "server.port" [env("HANDOFF_PORT"), env("MCP_PORT")]: "TCP port (0 picks a free one)";
    "server.allowed_hosts" [env("HANDOFF_ALLOWED_HOSTS")]: "Host header values accepted (DNS-rebinding guard); the bind name and the public_url host are added";
    "server.allowed_origins" [env("HANDOFF_ALLOWED_ORIGINS")]: "browser Origins accepted; `http://localhost:*` style, exact scheme/host/port";
    "server.cors_origins" [env("HANDOFF_CORS_ORIGINS")]: "exact Origins that get CORS headers (none by default)";
    "server.public_url" [env("HANDOFF_PUBLIC_URL")]: "Handoff's base URL as other services reach it (https://handoff.example.com): `handoff letta connect` registers <public_url>/mcp with Letta (a URL ending in /mcp is taken as it is), and its host is accepted in Host headers";
    "server.auth_token" [env("HANDOFF_AUTH_TOKEN")] secret=true: "bearer token required on /mcp when set (unset: no auth); its holder is a gateway, naming the agent per call with x-agent-id";
    "auth.tokens" [env("HANDOFF_AUTH_TOKENS")] secret=true: "bearer tokens and whom each stands for: JSON array of {token, role: agent|gateway|operator, agent_id?} (agent: bound to agent_id, sees and steers only its tasks; gateway: names the agent per call with x-agent-id, as a Letta server does; operator: sees and steers every task, agent_id is its name)";
    "auth.default_agent" [env("HANDOFF_DEFAULT_AGENT_ID")]: "the agent a caller that names none acts as (a client that sends no x-agent-id, on an open server or with a gateway token)";
    "server.max_body_bytes" [env("HANDOFF_MAX_BODY_BYTES")]: "largest accepted request body";
    "server.session_idle_timeout_secs" [env("HANDOFF_SESSION_IDLE_TIMEOUT_SECS")]: "legacy MCP sessions idle this long are closed";
    "server.unused_session_timeout_secs" [env("HANDOFF_UNUSED_SESSION_TIMEOUT_SECS")]: "legacy MCP sessions that sent no request after initialize are closed after this";
    "server.max_sessions" [env("HANDOFF_MAX_SESSIONS")]: "open legacy MCP sessions at most, all callers; at the limit a new initialize ends the least recently active session quiet for server.unused_session_timeout_secs, else is refused with 503 and a true Retry-After";
    "server.max_sessions_per_client" [env("HANDOFF_MAX_SESSIONS_PER_CLIENT")]: "open legacy MCP sessions at most per caller (token-bound agent, operator, or x-agent-id; callers naming none share one count); at the limit a new initialize ends the caller's own least recently active session";
    "server.shutdown_grace_secs" [env("HANDOFF_SHUTDOWN_GRACE_SECS")]: "how long in-flight requests may finish after SIGTERM";
    "server.header_read_timeout_secs" [env("HANDOFF_HEADER_READ_TIMEOUT_SECS")]: "a request line and headers must arrive within this (from connect, or from a later request's first byte)";
    "server.body_read_timeout_secs" [env("HANDOFF_BODY_READ_TIMEOUT_SECS")]: "a request body must arrive in full within this";
    "server.keep_alive_timeout_secs" [env("HANDOFF_KEEP_ALIVE_TIMEOUT_SECS")]: "a keep-alive connection with no request in flight is closed after this, as is one whose client stops reading a response for that long (a long response or SSE stream is in flight)";
    "server.max_connections" [env("HANDOFF_MAX_CONNECTIONS")]: "open HTTP connections at most; more are refused with 503";
    "log.level" [env("HANDOFF_LOG_LEVEL"), EnvAlias { name: "DEBUG", transform: Some(debug_flag) }]: "error, warn, info, debug or trace (DEBUG=true means debug; RUST_LOG directives override it; flag --log-level)";
    "log.format" [env("HANDOFF_LOG_FORMAT")]: "auto (text on a TTY, else JSON), text or json (flag --log-format)";
    "data_dir" [env("HANDOFF_DATA_DIR")]: "where Handoff keeps its database and spilled outputs (flag --data-dir of serve)";
    "store.url" [env("HANDOFF_DATABASE_URL")] secret=true: "the task store: a postgres:// URL selects PostgreSQL; unset: the embedded SQLite database in data_dir (one instance). Several Handoff instances may share one PostgreSQL database: each claims tasks under a lease renewed by its heartbeat, and the tasks of an instance that stops renewing are taken over (failed as interrupted, or re-queued when they opted in)";
    "store.heartbeat_ms" [env("HANDOFF_HEARTBEAT_MS")]: "how often this instance records that it is alive in the store and renews the leases of the tasks it runs";
    "store.clock_skew_ms" [env("HANDOFF_CLOCK_SKEW_MS")]: "the most the clocks of two instances sharing the store may differ (keep them synchronised, e.g. with NTP): another instance takes a task over only this long after its lease ran out, while the holder freezes the run a fifth of store.lease_expiry_ms before it runs out, so two runs of one task never overlap as long as the clocks differ by less than this";
    "store.lease_expiry_ms" [env("HANDOFF_LEASE_EXPIRY_MS")]: "a task whose lease was not renewed for this long is taken over by another instance (failed as interrupted, or re-queued when it opted in), and how long PostgreSQL lets one of this instance's sessions sit idle inside a transaction; at least twice store.heartbeat_ms";
    "workspace_dir" [env("HANDOFF_WORKSPACE_DIR"), env("WORKSPACE_DIR")]: "root of per-task working directories (default: <data_dir>/workspaces)";
    "tasks.max_concurrent" [env("HANDOFF_MAX_CONCURRENT_TASKS"), env("MAX_CONCURRENT_TASKS")]: "tasks running at once, all agents";
    "tasks.max_concurrent_per_agent" [env("HANDOFF_MAX_CONCURRENT_PER_AGENT")]: "tasks running at once for one agent (default: tasks.max_concurrent)";
    "tasks.max_queued" [env("HANDOFF_MAX_QUEUED_TASKS")]: "queued tasks before execute_task answers QUEUE_FULL";
    "tasks.default_timeout_ms" [env("HANDOFF_TASK_TIMEOUT_MS"), env("RUNNER_TIMEOUT_MS")]: "task deadline when execute_task gives none";
    "tasks.sync_wait_ms" [env("HANDOFF_SYNC_WAIT_MS")]: "how long sync=true waits before answering `running`";
    "tasks.poll_interval_ms" [env("HANDOFF_TASK_POLL_INTERVAL_MS")]: "how often MCP Tasks clients are asked to poll `tasks/get`";
    "tasks.max_description_bytes" [env("HANDOFF_MAX_DESCRIPTION_BYTES")]: "largest accepted task_description";
    "tasks.default_executor" [env("HANDOFF_DEFAULT_EXECUTOR")]: "executor used when execute_task names none (`opencode-acp`: one confined, pausable `opencode acp` per task; `opencode` is the shared, unconfined `opencode serve`)";
    "tasks.idempotency_window_secs" [env("HANDOFF_IDEMPOTENCY_WINDOW_SECS")]: "how long an idempotency key returns the same task";
    "tasks.retention_days" [env("HANDOFF_TASK_RETENTION_DAYS")]: "finished tasks (and their directories) are purged after this many days";
    "tasks.submissions_per_minute" [env("HANDOFF_SUBMISSIONS_PER_MINUTE")]: "execute_task calls one agent may make per minute (0 = unlimited), across every instance sharing a PostgreSQL store; each failed call of any tool costs one too, from the same bucket";
    "tasks.submission_burst" [env("HANDOFF_SUBMISSION_BURST")]: "submissions one agent may make at once before the rate applies";
    "tasks.cancel_grace_ms" [env("HANDOFF_CANCEL_GRACE_MS")]: "how long a cancelled or timed-out executor gets between SIGTERM and SIGKILL";
    "tasks.drain_secs" [env("HANDOFF_DRAIN_SECS")]: "on shutdown (SIGTERM), how long running tasks may still finish on their own while the instance claims nothing new (others take the queue); then the rest are stopped: failed as interrupted, or re-queued — for another instance on a shared store — when they opted in. 0: stop them at once";
    "tasks.requeue_on_restart" [env("HANDOFF_REQUEUE_ON_RESTART")]: "tasks that do not say (execute_task requeue_on_restart, handoff run --requeue-on-restart) go back in the queue, instead of failing, when Handoff stops (SIGTERM, after tasks.drain_secs) or dies (at the next start, when nothing of the run survived): they run again from the start, in the same directory";
    "tasks.artifact_max_bytes" [env("HANDOFF_ARTIFACT_MAX_BYTES")]: "largest output/log kept per task (beyond it the artifact is marked capped)";
    "tasks.artifact_inline_bytes" [env("HANDOFF_ARTIFACT_INLINE_BYTES")]: "artifacts larger than this are spilled to files under the data dir";
    "tasks.output_event_max_bytes" [env("HANDOFF_OUTPUT_EVENT_MAX_BYTES")]: "largest output event: consecutive lines are joined up to this, a longer line is clipped (the output artifact keeps it)";
    "tasks.output_max_events" [env("HANDOFF_OUTPUT_MAX_EVENTS")]: "output events stored per run; later output is counted, not stored as events (the output artifact keeps it)";
    "tasks.output_events_max_bytes" [env("HANDOFF_OUTPUT_EVENTS_MAX_BYTES")]: "bytes of output events stored per run; later output is counted, not stored as events";
    "tasks.snapshot_max_file_bytes" [env("HANDOFF_SNAPSHOT_MAX_FILE_BYTES")]: "files larger than this are not copied into the task's snapshot; the diff lists them as large files changed";
    "tasks.snapshot_max_bytes" [env("HANDOFF_SNAPSHOT_MAX_BYTES")]: "bytes copied into one snapshot at most; files beyond it are listed like large files";
    "tasks.snapshot_timeout_secs" [env("HANDOFF_SNAPSHOT_TIMEOUT_SECS")]: "longest the snapshot or diff of a task directory may take (a diff also ends with the task's deadline, or at once on cancel)";
    "tasks.workdir_roots" [env("HANDOFF_WORKDIR_ROOTS")]: "directories inside which execute_task may name its own workdir (none: callers cannot choose a directory)";
    "tasks.git_repository" [env("HANDOFF_GIT_REPOSITORY")]: "a git repository: each new task directory is a worktree of it on a branch of the task's own (handoff/<id>-<words>, from HEAD), and what each run changes is committed there by Handoff (unset: plain directories)";
    "tasks.workdir_cleanup" [env("HANDOFF_WORKDIR_CLEANUP")]: "retain (remove with the task at retention) or on_completion; a task's branch always stays";
    "tasks.delivery" [env("HANDOFF_DELIVERY")]: "when a round of a task on a branch ends completed: branch (leave the commits on the task's branch) or push (also push the branch to tasks.push_remote and run tasks.after_push); a task's own delivery argument wins";
    "tasks.push_remote" [env("HANDOFF_PUSH_REMOTE")]: "the remote of the task's repository a pushed branch goes to, with the operator's own git configuration and credentials, outside every sandbox";
    "tasks.after_push" [env("HANDOFF_AFTER_PUSH")]: "a shell command run in the repository after each push (e.g. gh pr create --fill --head \"$HANDOFF_BRANCH\"), with HANDOFF_BRANCH, HANDOFF_REMOTE, HANDOFF_TASK_ID, HANDOFF_TASK_TITLE, HANDOFF_ROUND, HANDOFF_REPOSITORY and HANDOFF_ANSWER_FILE set; its failure is reported on the task (unset: none)";
    "tasks.delivery_timeout_secs" [env("HANDOFF_DELIVERY_TIMEOUT_SECS")]: "longest a push, and then the after_push command, may take";
    "executors.command.argv" [env("HANDOFF_COMMAND_ARGV")]: "argv of the `command` executor: a JSON array, or words split on spaces; {prompt}, {task_id}, {workdir} are substituted (unset: no `command` executor)";
    "executors.command.prompt_via" [env("HANDOFF_COMMAND_PROMPT_VIA")]: "stdin or argument (the {prompt} placeholder)";
    "executors.command.messages_via_stdin" [env("HANDOFF_COMMAND_MESSAGES_VIA_STDIN")]: "keep stdin open after the prompt and deliver send_task_message as JSON lines (off: stdin closes after the prompt, so programs reading it to the end can start)";
    "executors.command.isolation" [env("HANDOFF_COMMAND_ISOLATION")]: "isolation level of the `command` executor (default: runner.isolation)";
    "executors.opencode.binary" [env("HANDOFF_OPENCODE_BINARY")]: "the `opencode` program Handoff runs `opencode serve` with";
    "executors.opencode.url" [env("HANDOFF_OPENCODE_URL")]: "attach to this running OpenCode server instead of starting one";
    "executors.opencode.password" [env("HANDOFF_OPENCODE_PASSWORD")] secret=true: "password of the attached OpenCode server (HTTP Basic, user opencode)";
    "executors.opencode.model" [env("HANDOFF_OPENCODE_MODEL")]: "provider/model for every prompt (the server's default when unset)";
    "executors.opencode.config" [env("HANDOFF_OPENCODE_CONFIG")]: "inline OpenCode config JSON for the server Handoff starts (OPENCODE_CONFIG_CONTENT)";
    "executors.opencode.retry_max_attempts" [env("HANDOFF_OPENCODE_RETRY_MAX_ATTEMPTS")]: "provider retries tolerated before the task fails (OpenCode itself retries forever)";
    "executors.opencode.retry_max_secs" [env("HANDOFF_OPENCODE_RETRY_MAX_SECS")]: "seconds spent retrying the provider before the task fails";
    "executors.opencode.delete_sessions" [env("HANDOFF_OPENCODE_DELETE_SESSIONS")]: "delete each task's OpenCode session when the task ends";
    "executors.opencode.isolation" [env("HANDOFF_OPENCODE_ISOLATION")]: "isolation level of the `opencode`, `opencode-cli` and `opencode-acp` executors (default: `sandbox` for `opencode-acp` where this host can sandbox, else runner.isolation; the shared server of `opencode` is never confined per task: `opencode-acp` runs one confined `opencode acp` per task)";
    "executors.opencode.pool" [env("HANDOFF_OPENCODE_POOL")]: "`opencode acp` agents `opencode-acp` keeps started ahead of tasks (confined, past their handshake, ~400 MB each): a task takes one and its directory, which hides the agent's start of several seconds; 0 starts one per task";
    "executors.claude.binary" [env("HANDOFF_CLAUDE_BINARY")]: "the `claude` program (Claude Code) the `claude` executor runs";
    "executors.claude.model" [env("HANDOFF_CLAUDE_MODEL")]: "model passed to Claude Code (--model; Claude Code's default when unset)";
    "executors.claude.max_retries" [env("HANDOFF_CLAUDE_MAX_RETRIES")]: "provider retries before Claude Code gives up (CLAUDE_CODE_MAX_RETRIES)";
    "executors.claude.isolation" [env("HANDOFF_CLAUDE_ISOLATION")]: "isolation level of the `claude` executor (default: runner.isolation)";
    "executors.codex.binary" [env("HANDOFF_CODEX_BINARY")]: "the `codex` program (Codex CLI) the `codex` executor runs as `codex app-server`";
    "executors.codex.model" [env("HANDOFF_CODEX_MODEL")]: "model for Codex's threads (Codex's configured model when unset)";
    "executors.codex.home" [env("HANDOFF_CODEX_HOME")]: "the CODEX_HOME each Codex run's own home is seeded from (its config.toml, auth.json, instructions); $CODEX_HOME or ~/.codex when unset";
    "executors.codex.max_retries" [env("HANDOFF_CODEX_MAX_RETRIES")]: "provider retries before Codex gives up (request_max_retries and stream_max_retries of a custom provider)";
    "executors.codex.isolation" [env("HANDOFF_CODEX_ISOLATION")]: "isolation level of the `codex` executor (default: runner.isolation)";
    "executors.acp" [env("HANDOFF_ACP_EXECUTORS")] secret=true: "ACP agents offered as executors, each under its own name: [executors.acp.<name>] tables of {argv, env?, isolation?, pool?, mcp_servers?}, or one JSON object {\"<name>\": {argv, env?, isolation?, pool?, mcp_servers?}}; one agent process per task speaks the Agent Client Protocol on stdio (e.g. argv [\"opencode\", \"acp\"]); isolation defaults to a sandbox where the host can sandbox, else runner.isolation; pool (default 0) agents are kept started ahead of tasks; mcp_servers (default none) are given to every task session: [{name, command, args?, env?}] started by the agent on stdio inside its confinement, or {name, type: http|sse, url, headers?} for agents that declare they reach them";
    "executors.permissions" [env("HANDOFF_PERMISSION_RULES")]: "JSON array of {permission, pattern, action: allow|deny|ask}; last match wins; `ask` puts the task in input_required";
    "executors.ask_timeout_secs" [env("HANDOFF_ASK_TIMEOUT_SECS")]: "an unanswered permission or question request is denied after this many seconds";
    "tools.permissions" [env("HANDOFF_TOOL_PERMISSION_RULES")]: "JSON array of {permission: tool name, pattern: key=value of an argument, action, agent?}: which Handoff tools each agent may call (a blanket deny hides the tool)";
    "tools.loop_guard_warn" [env("HANDOFF_LOOP_GUARD_WARN")]: "identical repeats of a tool call (or short cycle) after which it is not run and the caller is told why";
    "tools.loop_guard_deny" [env("HANDOFF_LOOP_GUARD_DENY")]: "repeats after which the call is denied";
    "tools.loop_guard_stop" [env("HANDOFF_LOOP_GUARD_STOP")]: "repeats after which an executor's task is stopped as stuck";
    "tools.loop_guard_window_secs" [env("HANDOFF_LOOP_GUARD_WINDOW_SECS")]: "an agent's identical calls to Handoff's tools count as repeats only within this many seconds";
    "tools.output_max_lines" [env("HANDOFF_OUTPUT_MAX_LINES")]: "lines kept of any text a tool returns; the rest is spilled to a file readable with read_tool_output";
    "tools.output_max_bytes" [env("HANDOFF_OUTPUT_MAX_BYTES")]: "bytes kept of any text a tool returns, and of a whole tool result";
    "tools.output_limits" [env("HANDOFF_OUTPUT_LIMITS")]: "per-tool caps: JSON array of {tool, max_lines?, max_bytes?, direction?: head|tail|head_tail}";
    "tools.spill_retention_days" [env("HANDOFF_SPILL_RETENTION_DAYS")]: "spilled tool outputs are removed after this many days";
    "hooks" [env("HANDOFF_HOOKS")]: "external hooks (Claude Code format): [[hooks]] tables or a JSON array of {event: PreToolUse|PostToolUse|Stop|TaskStart|TaskEnd, matcher?, command, timeout_secs?, fail_closed?}";
    "completion.policy" [env("HANDOFF_COMPLETION_POLICY")]: "how tasks are verified before they are reported completed: none, checks (verify commands, changes, todos, stuck flags), judge (checks then an external LLM judge), manager (a plan of sub-tasks, each verified)";
    "completion.verify_commands" [env("HANDOFF_VERIFY_COMMANDS")]: "commands every task must pass in its directory (JSON array, or one command)";
    "completion.verify_timeout_secs" [env("HANDOFF_VERIFY_TIMEOUT_SECS")]: "longest one verify command may run; the task's remaining deadline and wall budget bound it too, and it is killed with its process group";
    "completion.verify_before_secs" [env("HANDOFF_VERIFY_BEFORE_SECS")]: "longest one verify command runs on the task directory before the run, to count the tests that ran before it (a quarter of the task's deadline bounds it too); 0: not run before";
    "completion.protected_paths" [env("HANDOFF_PROTECTED_PATHS")]: "files (comma-separated; a directory covers its files; * and ** globs) a task must not change for its checks to pass, besides the verify scripts and the test files and Makefile they name";
    "completion.max_cycles" [env("HANDOFF_COMPLETION_MAX_CYCLES")]: "evaluation cycles per task at most (the first run plus continuations)";
    "completion.min_confidence" [env("HANDOFF_COMPLETION_MIN_CONFIDENCE")]: "a judge's done below this confidence counts as not done";
    "completion.budget_wall_secs" [env("HANDOFF_BUDGET_WALL_SECS")]: "wall time cap per task across continuations (unset: no cap)";
    "completion.budget_turns" [env("HANDOFF_BUDGET_TURNS")]: "executor turns cap per task (unset: no cap)";
    "completion.budget_tokens" [env("HANDOFF_BUDGET_TOKENS")]: "token cap per task, executor and judge (unset: no cap)";
    "completion.budget_cost_usd" [env("HANDOFF_BUDGET_COST_USD")]: "cost cap per task in USD, executor and judge (unset: no cap)";
    "models.provider_url" [env("HANDOFF_MODELS_PROVIDER_URL")]: "the model provider tasks reach through Handoff's gateway: an OpenAI-compatible base URL (…/v1; OpenAI, Ollama, vLLM, llama.cpp) or Anthropic's; it goes by the name default (unset, with no models.providers either: no gateway; agents use their own provider settings)";
    "models.provider_wire" [env("HANDOFF_MODELS_PROVIDER_WIRE")]: "the provider's wire: openai (Chat Completions and Responses) or anthropic (Messages)";
    "models.provider_key_env" [env("HANDOFF_MODELS_PROVIDER_KEY_ENV")]: "the environment variable holding the provider's key (default OPENAI_API_KEY, or ANTHROPIC_API_KEY for anthropic); only the gateway reads it, no task is given it";
    "models.provider_key_file" [env("HANDOFF_MODELS_PROVIDER_KEY_FILE")]: "a file holding the provider's key instead (absolute path; its first line; readable by Handoff's user only, else refused; hidden inside every sandbox; re-read when it changes, so a rotated key takes effect at the next call)";
    "models.providers" [env("HANDOFF_MODELS_PROVIDERS")]: "more providers, each under its own name: [models.providers.<name>] tables of {url, wire? (openai|anthropic, default openai), key_env? (default OPENAI_API_KEY or ANTHROPIC_API_KEY) or key_file?, model?, price_input_per_mtok?, price_output_per_mtok?, price_cached_per_mtok?}, or one JSON object of them. A call asking for the model <name>/<model> goes to that provider as <model>; any other goes to the first provider of its wire (models.provider_url's first). So Claude Code (Anthropic wire) and OpenCode or Codex (OpenAI wire) are served at once, each by its own provider and key";
    "models.gateway" [env("HANDOFF_MODELS_GATEWAY")]: "with a provider set, give tasks the gateway's URL and a token of their own instead of the key, count every call's tokens and enforce the task's token and cost budget there (false: agents use their own provider settings)";
    "models.model" [env("HANDOFF_MODELS_MODEL")]: "the model the built-in agents use through the gateway; <name>/<model> names one of models.providers' (OpenCode names it handoff/<model>). An agent of the other wire (Claude Code: anthropic; Codex: openai) uses instead the model of the first provider of its wire; an executor's own model setting wins over both. Unset: each agent's own model setting";
    "models.direct" [env("HANDOFF_MODELS_DIRECT")]: "executors (comma-separated names) kept off the gateway: they use their own provider settings and key, and their calls are neither counted nor capped by Handoff";
    "models.task_calls_per_minute" [env("HANDOFF_MODELS_TASK_CALLS_PER_MINUTE")]: "model calls one task may make through the gateway per minute (a minute's worth may come at once); more get HTTP 429 with retry-after (unset: no limit)";
    "models.agent_calls_per_minute" [env("HANDOFF_MODELS_AGENT_CALLS_PER_MINUTE")]: "model calls all of one agent's tasks together may make through the gateway per minute; more get HTTP 429 with retry-after (unset: no limit)";
    "models.price_input_per_mtok" [env("HANDOFF_MODELS_PRICE_INPUT")]: "USD per million input tokens of every model of the models.provider_url provider (unset: models.prices, else the built-in list price, else no cost; tokens are still counted)";
    "models.price_output_per_mtok" [env("HANDOFF_MODELS_PRICE_OUTPUT")]: "USD per million output tokens of calls through the gateway";
    "models.price_cached_per_mtok" [env("HANDOFF_MODELS_PRICE_CACHED")]: "USD per million input tokens read from the provider's cache (unset: the input price); set with the two above";
    "models.prices" [env("HANDOFF_MODELS_PRICES")]: "prices per model, before the flat prices above and the built-in list prices of common models (gpt-4.1, gpt-4o, gpt-5, o3, claude-sonnet-4, …): a JSON object of model name (or the start of one) → {\"input\": USD, \"output\": USD, \"cached\"?: USD} per million tokens (cached: input read from the provider's cache; unset: the input price). The built-in prices carry the providers' cached-input prices";
    "evaluator.provider" [env("HANDOFF_EVALUATOR_PROVIDER")]: "the judge's API: anthropic, openai, openai_responses, gemini, openai_compatible (xai, local servers); unset: no judge";
    "evaluator.model" [env("HANDOFF_EVALUATOR_MODEL")]: "the judge's model";
    "evaluator.models_provider" [env("HANDOFF_EVALUATOR_MODELS_PROVIDER")]: "the judge on one of the model gateway's providers: default (models.provider_url) or a models.providers name; its wire, URL and key (a key file is read at start) stand in for evaluator.provider, base_url and api_key_env where those are unset, and its model (models.model when that goes to it, else the provider's own) for evaluator.model. The judge calls the provider directly (it runs inside Handoff), so its tokens are counted by the judge's own ledger, not the gateway's";
    "evaluator.api_key_env" [env("HANDOFF_EVALUATOR_API_KEY_ENV")]: "the environment variable holding the judge's API key";
    "evaluator.base_url" [env("HANDOFF_EVALUATOR_BASE_URL")]: "the judge's endpoint (default: the provider's public endpoint; required for openai_compatible)";
    "evaluator.timeout_secs" [env("HANDOFF_EVALUATOR_TIMEOUT_SECS")]: "bound on one judge call";
    "evaluator.max_retries" [env("HANDOFF_EVALUATOR_MAX_RETRIES")]: "judge call retries on 408/429/5xx and connection failures";
    "evaluator.price_input_per_mtok" [env("HANDOFF_EVALUATOR_PRICE_INPUT")]: "USD per million input tokens of the judge (unset: no cost accounting)";
    "evaluator.price_output_per_mtok" [env("HANDOFF_EVALUATOR_PRICE_OUTPUT")]: "USD per million output tokens of the judge";
    "runner.cpu_limit" [env("HANDOFF_RUNNER_CPU_LIMIT"), env("RUNNER_CPU_LIMIT")]: "CPUs per task (e.g. 1.5; unset: no limit)";
    "runner.memory_limit" [env("HANDOFF_RUNNER_MEMORY_LIMIT"), env("RUNNER_MEMORY_LIMIT")]: "memory per task (e.g. 2g; unset: no limit)";
    "runner.image" [env("HANDOFF_RUNNER_IMAGE"), env("RUNNER_IMAGE")]: "container image for the container isolation level";
    "runner.isolation" [env("HANDOFF_ISOLATION")]: "isolation of every executor's processes: none, process, sandbox or container (a level the host cannot provide refuses the task)";
    "runner.network" [env("HANDOFF_ISOLATION_NETWORK")]: "network inside sandbox and container: shared (agents reach their model provider) or off";
    "runner.pids_limit" [env("HANDOFF_RUNNER_PIDS_LIMIT")]: "processes and threads per task (e.g. 256; unset: no limit)";
    "runner.env_allow" [env("HANDOFF_ISOLATION_ENV_ALLOW")]: "inherited variables (NAME or PREFIX*) an isolated executor keeps besides the defaults; HANDOFF_* and LETTA_* never pass";
    "runner.sandbox_writable" [env("HANDOFF_SANDBOX_WRITABLE")]: "paths writable inside the sandbox besides the task directory (an agent's state directory)";
    "runner.bwrap" [env("HANDOFF_BWRAP")]: "the bubblewrap program the sandbox level uses";
    "runner.docker" [env("HANDOFF_DOCKER")]: "the docker client the container level uses";
    "runner.docker_retry_secs" [env("HANDOFF_DOCKER_RETRY_SECS")]: "while an executor runs at the container level and no Docker engine answers, it is asked again this often, so a daemon started after Handoff is found (0: asked once, at start-up)";
    "letta.api_url" [env("HANDOFF_LETTA_API_URL"), env("LETTA_API_URL")]: "Letta server URL; Letta integration is off when unset";
    "letta.api_token" [env("HANDOFF_LETTA_API_TOKEN"), env("LETTA_API_TOKEN")] secret=true: "Letta bearer token";
    "letta.tool_prefix" [env("HANDOFF_LETTA_TOOL_PREFIX")]: "what `handoff letta connect` names its things in Letta (tool names are unique per organisation): the MCP server, native tools <prefix>_execute_task…, agent secrets <PREFIX>_MCP_URL / <PREFIX>_MCP_TOKEN; lowercase letters, digits, _";
    "letta.workspace_blocks" [env("HANDOFF_LETTA_WORKSPACE_BLOCKS")]: "keep a workspace memory block per task (label handoff_task_<id>) in the owning Letta agent's memory";
    "letta.block_limit" [env("HANDOFF_LETTA_BLOCK_LIMIT")]: "the workspace block's limit in characters, at least 1000; Handoff prunes and clips so no value written is longer";
    "letta.min_update_interval_ms" [env("HANDOFF_LETTA_MIN_UPDATE_INTERVAL_MS")]: "a task's block is written at most once per this interval however fast events arrive (status changes at once)";
    "letta.detach_delay_secs" [env("HANDOFF_LETTA_DETACH_DELAY_SECS")]: "a finished task's block stays attached this long (kept across restarts)";
    "letta.block_retention_secs" [env("HANDOFF_LETTA_BLOCK_RETENTION_SECS")]: "a detached block is deleted after this long";
    "letta.notify" [env("HANDOFF_LETTA_NOTIFY")]: "send the owning agent one message when a task ends (execute_task notify:false opts out per task)";
    "letta.notify_role" [env("HANDOFF_LETTA_NOTIFY_ROLE")]: "role of that message: system or user";
    "letta.notify_sync" [env("HANDOFF_LETTA_NOTIFY_SYNC")]: "send that message also when the task's final result already reached the agent in its execute_task {sync: true} call";
    "letta.request_timeout_secs" [env("HANDOFF_LETTA_REQUEST_TIMEOUT_SECS")]: "bound on one call to Letta";
    "letta.max_retries" [env("HANDOFF_LETTA_MAX_RETRIES")]: "retries of one call on 408/429/5xx and connection failures (exponential back-off with jitter, Retry-After honoured)";
    "letta.max_concurrent_requests" [env("HANDOFF_LETTA_MAX_CONCURRENT_REQUESTS")]: "calls to Letta in flight at once, across all tasks";
    "letta.requests_per_second" [env("HANDOFF_LETTA_REQUESTS_PER_SECOND")]: "calls to Letta started per second at most, across all tasks";
    "letta.sweep_interval_secs" [env("HANDOFF_LETTA_SWEEP_INTERVAL_SECS")]: "how often due detaches, deletes and retries are looked for";
    "matrix.homeserver_url" [env("HANDOFF_MATRIX_HOMESERVER_URL"), env("MATRIX_HOMESERVER_URL")]: "Matrix homeserver (client-server API) URL; the Matrix integration is off unless this and matrix.access_token are set";
    "matrix.access_token" [env("HANDOFF_MATRIX_ACCESS_TOKEN"), env("MATRIX_ACCESS_TOKEN")] secret=true: "the Matrix bot's access token";
    "matrix.room_per_task" [env("HANDOFF_MATRIX_ROOM_PER_TASK")]: "give every task a Matrix room, not only tasks whose execute_task observers name Matrix users (@name:server)";
    "matrix.default_observers" [env("HANDOFF_MATRIX_DEFAULT_OBSERVERS"), env("MATRIX_DEFAULT_HUMAN_OBSERVERS")]: "Matrix users invited to every task's room (read only unless also controllers); comma-separated";
    "matrix.controllers" [env("HANDOFF_MATRIX_CONTROLLERS")]: "who may steer a task from its room (!cancel, !pause, !resume, !approve, !deny, messages to the agent): Matrix user ids or *:server; everyone else is refused";
    "matrix.owners" [env("HANDOFF_MATRIX_OWNERS")]: "each agent's owner on Matrix, as agent-id=@name:server (comma-separated): that agent's tasks get rooms, the owner is invited and may steer them like a controller";
    "matrix.observers_may_talk" [env("HANDOFF_MATRIX_OBSERVERS_MAY_TALK")]: "observers may write in a task's room (events_default 0) instead of only reading; what they write never reaches the task unless they are controllers";
    "matrix.event_interval_ms" [env("HANDOFF_MATRIX_EVENT_INTERVAL_MS")]: "a task's events are posted to its room at most once per this interval, coalesced (status changes at once)";
    "matrix.archive_after_secs" [env("HANDOFF_MATRIX_ARCHIVE_AFTER_SECS")]: "the bot leaves and forgets a finished task's room this long after it ends (kept across restarts)";
    "matrix.request_timeout_secs" [env("HANDOFF_MATRIX_REQUEST_TIMEOUT_SECS")]: "bound on one call to the homeserver (besides the sync long poll)";
    "matrix.sync_timeout_ms" [env("HANDOFF_MATRIX_SYNC_TIMEOUT_MS")]: "how long one /sync long poll waits for new messages";
    "features.async_execute" [env("HANDOFF_ENABLE_ASYNC_EXECUTE"), env("ENABLE_ASYNC_EXECUTE")]: "allow execute_task without sync=true";
    "features.enforce_idempotency" [env("HANDOFF_ENFORCE_IDEMPOTENCY"), env("ENFORCE_IDEMPOTENCY")]: "honour idempotency keys";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique() {
        let mut keys: Vec<_> = SETTINGS.iter().map(|s| s.key).collect();
        keys.sort_unstable();
        let before = keys.len();
        keys.dedup();
        assert_eq!(before, keys.len());
    }

    #[test]
    fn legacy_names_are_honoured() {
        for legacy in [
            "MCP_PORT",
            "MCP_HOST",
            "LETTA_API_URL",
            "LETTA_API_TOKEN",
            "MAX_CONCURRENT_TASKS",
            "RUNNER_TIMEOUT_MS",
            "RUNNER_CPU_LIMIT",
            "RUNNER_MEMORY_LIMIT",
            "RUNNER_IMAGE",
            "WORKSPACE_DIR",
            "DEBUG",
            "ENABLE_ASYNC_EXECUTE",
            "ENFORCE_IDEMPOTENCY",
            "MATRIX_HOMESERVER_URL",
            "MATRIX_ACCESS_TOKEN",
            "MATRIX_DEFAULT_HUMAN_OBSERVERS",
        ] {
            assert!(
                SETTINGS
                    .iter()
                    .any(|s| s.env.iter().any(|e| e.name == legacy)),
                "{legacy} is not mapped"
            );
        }
    }
}
