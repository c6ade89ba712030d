//! What differs between the benchmarked agents: the rows an executor name stands for, the
//! scripted model's tool call, the programs, the environments and the bare command lines.

use std::path::{Path, PathBuf};

use handoff_scripted_model::ScriptedModel;
use serde_json::{Value, json};

use crate::BenchError;

/// An agent and the way Handoff runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `opencode`: tasks go to the shared `opencode serve` Handoff supervises.
    OpenCode,
    /// `opencode-acp`: the built-in ACP executor, one `opencode acp` per task.
    OpenCodeAcp,
    /// `claude`: one Claude Code stream-json process per task.
    Claude,
    /// `codex-acp`: the Codex ACP adapter, configured as an ACP agent.
    CodexAcp,
}

/// One measured row: an agent behind one Handoff setup, next to its own CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Variant {
    /// The row's name in the table.
    pub label: String,
    /// The agent.
    pub kind: Kind,
    /// `opencode-acp` only: agents started ahead of tasks (`HANDOFF_OPENCODE_POOL`).
    pub pool: Option<usize>,
}

/// The names `--executors` accepts.
pub(super) const NAMES: &str = "opencode, opencode-acp, claude, codex-acp";

/// The rows executor `name` is measured as: `opencode-acp` twice, without and with a pool.
pub(super) fn variants(name: &str) -> Result<Vec<Variant>, BenchError> {
    let one = |label: &str, kind| {
        vec![Variant {
            label: label.to_owned(),
            kind,
            pool: None,
        }]
    };
    let acp = |pool: usize, label: &str| Variant {
        label: label.to_owned(),
        kind: Kind::OpenCodeAcp,
        pool: Some(pool),
    };
    Ok(match name {
        "opencode" => one("opencode (shared server)", Kind::OpenCode),
        "opencode-acp" => vec![
            acp(0, "opencode-acp unpooled"),
            acp(1, "opencode-acp pool 1"),
        ],
        "claude" => one("claude", Kind::Claude),
        "codex-acp" => one("codex-acp", Kind::CodexAcp),
        other => {
            return Err(BenchError::Setup(format!(
                "no executor benchmark for `{other}` ({NAMES})"
            )));
        }
    })
}

impl Kind {
    /// The executor's name in Handoff.
    pub(super) fn executor(self) -> &'static str {
        match self {
            Kind::OpenCode => "opencode",
            Kind::OpenCodeAcp => "opencode-acp",
            Kind::Claude => "claude",
            Kind::CodexAcp => "codex-acp",
        }
    }

    /// The scripted model's answers: a task creates `bench.txt` through the agent's own tool.
    pub(super) fn script(self) -> Value {
        let call = match self {
            Kind::OpenCode | Kind::OpenCodeAcp => {
                json!({"name": "write", "arguments": {"filePath": "{{cwd}}/bench.txt", "content": "bench\n"}})
            }
            Kind::Claude => {
                json!({"name": "Write", "arguments": {"file_path": "{{cwd}}/bench.txt", "content": "bench\n"}})
            }
            // Codex has no write tool: it intercepts `apply_patch` run through `exec_command`.
            Kind::CodexAcp => json!({"name": "exec_command", "arguments": {
                "cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: bench.txt\n+bench\n*** End Patch\nEOF\n",
                "workdir": "{{cwd}}"
            }}),
        };
        json!({"scenarios": [{"match": "CREATE-FILE", "turns": [
            {"tool_calls": [call]},
            {"text": "Created bench.txt."}
        ]}], "default": {"text": "done"}, "untooled": {"text": "Bench"}})
    }

    /// The program Handoff runs, from its `HANDOFF_*_BINARY` variable or `PATH`.
    pub(super) fn handoff_program(self) -> Result<String, BenchError> {
        match self {
            Kind::OpenCode | Kind::OpenCodeAcp => program("HANDOFF_OPENCODE_BINARY", "opencode"),
            Kind::Claude => program("HANDOFF_CLAUDE_BINARY", "claude"),
            Kind::CodexAcp => program("HANDOFF_CODEX_ACP_BINARY", "codex-acp"),
        }
    }

    /// The agent's own CLI, the baseline.
    pub(super) fn bare_program(self) -> Result<String, BenchError> {
        match self {
            Kind::CodexAcp => program("HANDOFF_CODEX_BINARY", "codex"),
            other => other.handoff_program(),
        }
    }

    /// The bare CLI's arguments for `prompt`: one non-interactive run that may write files.
    pub(super) fn bare_args(self, prompt: &str) -> Vec<String> {
        let args: &[&str] = match self {
            Kind::OpenCode | Kind::OpenCodeAcp => &["run", "--format", "json"],
            Kind::Claude => &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "bypassPermissions",
            ],
            Kind::CodexAcp => &[
                "exec",
                "--skip-git-repo-check",
                "--sandbox",
                "workspace-write",
                "--json",
            ],
        };
        let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        args.push(prompt.to_owned());
        args
    }
}

/// `$variable`, else `name`'s first match on `PATH`, as an absolute path.
fn program(variable: &str, name: &str) -> Result<String, BenchError> {
    let wanted = std::env::var(variable).unwrap_or_else(|_| name.to_owned());
    let found = if wanted.contains('/') {
        Some(PathBuf::from(&wanted)).filter(|p| p.is_file())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(&wanted))
                .find(|p| p.is_file())
        })
    };
    found
        .map(|p| p.display().to_string())
        .ok_or_else(|| BenchError::Setup(format!("`{wanted}` not found: set {variable}")))
}

/// Environment that points every agent at `model` and keeps its state in `home`.
pub(super) fn agent_env(model: &ScriptedModel, home: &Path) -> Vec<(&'static str, String)> {
    let config = opencode_config(model);
    let dir = |name: &str| home.join(name).display().to_string();
    vec![
        ("HOME", dir("home")),
        ("XDG_CONFIG_HOME", dir("config")),
        ("XDG_DATA_HOME", dir("data")),
        ("XDG_CACHE_HOME", dir("cache")),
        ("XDG_STATE_HOME", dir("state")),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_owned()),
        ("OPENCODE_DISABLE_PROJECT_CONFIG", "1".to_owned()),
        ("OPENCODE_CONFIG_CONTENT", config.to_string()),
        ("HANDOFF_OPENCODE_CONFIG", config.to_string()),
        ("HANDOFF_OPENCODE_MODEL", "mock/mock-model".to_owned()),
        ("ANTHROPIC_BASE_URL", model.base_url()),
        ("ANTHROPIC_API_KEY", "sk-ant-mock".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("IS_SANDBOX", "1".to_owned()),
    ]
}

/// OpenCode's config: the scripted model as its only provider.
fn opencode_config(model: &ScriptedModel) -> Value {
    json!({
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": model.openai_base_url(), "apiKey": "sk-mock"},
            "models": {"mock-model": {"name": "Mock", "tool_call": true, "limit": {"context": 128000, "output": 8192}}}
        }},
        "model": "mock/mock-model", "small_model": "mock/mock-model",
        "autoupdate": false, "share": "disabled"
    })
}

/// What `handoff serve` needs on top of [`agent_env`] to run `variant` as its default
/// executor, with the agent's state under `home`.
pub(super) fn handoff_env(
    variant: &Variant,
    model: &ScriptedModel,
    home: &Path,
) -> Result<Vec<(&'static str, String)>, BenchError> {
    let mut env = agent_env(model, home);
    let program = variant.kind.handoff_program()?;
    match variant.kind {
        Kind::OpenCode => env.push(("HANDOFF_OPENCODE_BINARY", program)),
        Kind::Claude => env.push(("HANDOFF_CLAUDE_BINARY", program)),
        Kind::OpenCodeAcp => {
            // The built-in writes its own config from HANDOFF_OPENCODE_CONFIG (every tool asks,
            // so Handoff's rules decide); an inherited one must not stand beside it.
            env.retain(|(k, _)| *k != "OPENCODE_CONFIG_CONTENT");
            env.push(("HANDOFF_OPENCODE_BINARY", program));
            // Its databases and caches (the XDG dirs above) live here, outside the sandbox.
            env.push(("HANDOFF_SANDBOX_WRITABLE", home.display().to_string()));
        }
        Kind::CodexAcp => {
            let agent = codex_env(model, home)?;
            let agent: serde_json::Map<String, Value> = agent
                .into_iter()
                .chain([
                    ("CODEX_PATH", Kind::CodexAcp.bare_program()?),
                    ("HOME", home.join("home").display().to_string()),
                    // Read-only mode asks the client before every edit and command, so Handoff's
                    // rules decide (the default mode has a model review approvals).
                    ("INITIAL_AGENT_MODE", "read-only".to_owned()),
                ])
                .map(|(k, v)| (k.to_owned(), json!(v)))
                .collect();
            let agents =
                json!({"codex-acp": {"argv": [program], "env": agent, "isolation": "process"}});
            env.push(("HANDOFF_ACP_EXECUTORS", agents.to_string()));
        }
    }
    // Other rows keep no `opencode acp` started beside them, measured or not.
    let pool = variant.pool.unwrap_or(0).to_string();
    env.push(("HANDOFF_OPENCODE_POOL", pool));
    env.push((
        "HANDOFF_DEFAULT_EXECUTOR",
        variant.kind.executor().to_owned(),
    ));
    env.push(("HANDOFF_SUBMISSIONS_PER_MINUTE", "0".to_owned()));
    Ok(env)
}

/// The environment of the agent's own CLI, its state under `home`.
pub(super) fn bare_env(
    kind: Kind,
    model: &ScriptedModel,
    home: &Path,
) -> Result<Vec<(&'static str, String)>, BenchError> {
    let mut env = agent_env(model, home);
    if kind == Kind::CodexAcp {
        env.extend(codex_env(model, home)?);
    }
    Ok(env)
}

/// Codex's home under `home`, its config.toml naming the scripted model as provider; the
/// variables that point Codex there. Its temp dir must not contain that home, or Codex refuses
/// to install its helpers (apply_patch, sandbox).
fn codex_env(
    model: &ScriptedModel,
    home: &Path,
) -> Result<Vec<(&'static str, String)>, BenchError> {
    let codex_home = home.join("codex-home");
    let tmp = home.join("tmp");
    let io = |source| BenchError::Io {
        context: "writing Codex's config",
        source,
    };
    for dir in [&codex_home, &tmp] {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(codex_home.join("config.toml"), codex_config(model)).map_err(io)?;
    Ok(vec![
        ("CODEX_HOME", codex_home.display().to_string()),
        ("TMPDIR", tmp.display().to_string()),
        ("MOCK_API_KEY", "sk-mock".to_owned()),
    ])
}

fn codex_config(model: &ScriptedModel) -> String {
    format!(
        r#"model = "mock-model"
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "Mock"
base_url = "{}"
env_key = "MOCK_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
"#,
        model.openai_base_url()
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn opencode_acp_is_measured_unpooled_and_with_a_pool_of_one() {
        let rows = variants("opencode-acp").unwrap();
        let shown: Vec<(&str, Option<usize>)> =
            rows.iter().map(|v| (v.label.as_str(), v.pool)).collect();
        assert_eq!(
            shown,
            [
                ("opencode-acp unpooled", Some(0)),
                ("opencode-acp pool 1", Some(1))
            ]
        );
        assert!(rows.iter().all(|v| v.kind == Kind::OpenCodeAcp));
    }

    #[test]
    fn every_other_name_is_one_row_and_unknown_names_are_refused() {
        for (name, label, kind) in [
            ("opencode", "opencode (shared server)", Kind::OpenCode),
            ("claude", "claude", Kind::Claude),
            ("codex-acp", "codex-acp", Kind::CodexAcp),
        ] {
            let rows = variants(name).unwrap();
            assert_eq!(rows.len(), 1, "{name}");
            assert_eq!((rows[0].label.as_str(), rows[0].kind), (label, kind));
            assert_eq!(rows[0].pool, None);
            assert_eq!(kind.executor(), name);
        }
        let error = variants("gemini").unwrap_err().to_string();
        assert!(
            error.contains("`gemini`") && error.contains(NAMES),
            "{error}"
        );
    }

    #[test]
    fn each_script_writes_bench_txt_through_the_agents_own_tool() {
        for (kind, tool) in [
            (Kind::OpenCode, "write"),
            (Kind::OpenCodeAcp, "write"),
            (Kind::Claude, "Write"),
            (Kind::CodexAcp, "exec_command"),
        ] {
            let script = kind.script();
            let call = &script["scenarios"][0]["turns"][0]["tool_calls"][0];
            assert_eq!(call["name"], tool, "{kind:?}");
            assert!(
                call["arguments"].to_string().contains("bench.txt"),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn the_bare_codex_run_is_codex_exec_with_the_prompt_last() {
        let args = Kind::CodexAcp.bare_args("CREATE-FILE bare 1");
        assert_eq!(args[0], "exec");
        assert!(args.contains(&"--skip-git-repo-check".to_owned()));
        assert_eq!(args.last().unwrap(), "CREATE-FILE bare 1");
        assert_eq!(
            Kind::OpenCodeAcp.bare_args("p"),
            Kind::OpenCode.bare_args("p")
        );
    }

    #[test]
    fn a_missing_program_names_its_variable() {
        let error = program("HANDOFF_BENCH_TEST_UNSET_BINARY", "no-such-agent-program")
            .unwrap_err()
            .to_string();
        assert!(error.contains("HANDOFF_BENCH_TEST_UNSET_BINARY"), "{error}");
    }
}
