//! `handoff doctor`: checks what this configuration needs on this machine — executor programs
//! and versions (an ACP agent's from its answer to `initialize`), `rg`, the model endpoint OpenCode is pointed at, the sandbox layer, the data
//! directory, Letta — and says how to fix what is missing.

use std::{path::Path, process::Stdio, time::Duration};

use handoff_config::{Config, mask_setting_text};
use handoff_isolation::IsolationLevel;
use serde_json::Value;
use tokio::process::Command;

use crate::program::find_program;

mod acp;
mod gateway;
mod model;

/// How long one probe may take.
const PROBE: Duration = Duration::from_secs(15);

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// It is fine.
    pub ok: bool,
    /// Handoff's main job needs it (a failed required check makes `doctor` exit non-zero).
    pub required: bool,
    /// What was found.
    pub detail: String,
    /// How to fix it, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    // Details quote configured URLs (and errors that repeat them): credentials in them are
    // masked here, the one place every detail passes.
    fn pass(name: &str, detail: impl Into<String>) -> Self {
        Self {
            name: name.to_owned(),
            ok: true,
            required: false,
            detail: mask_setting_text(&detail.into()),
            fix: None,
        }
    }

    fn fail(name: &str, required: bool, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name: name.to_owned(),
            ok: false,
            required,
            detail: mask_setting_text(&detail.into()),
            fix: Some(fix.into()),
        }
    }
}

/// The model tasks will use, checked without I/O beyond reading OpenCode's config file: what
/// `serve` warns about at start-up.
pub(crate) fn task_model(config: &Config) -> Check {
    gateway::task_model(config, &config.tasks.default_executor)
        .unwrap_or_else(|| model::task_model(config, &|name| std::env::var(name).ok()))
}

/// Runs every check for `config`.
pub async fn diagnose(config: &Config) -> Vec<Check> {
    diagnose_with(config, |_| {}).await
}

/// Runs every check for `config`, handing each to `seen` as soon as it is done (`doctor`
/// prints them as they come: some take seconds).
pub async fn diagnose_with(config: &Config, mut seen: impl FnMut(&Check)) -> Vec<Check> {
    let default = config.tasks.default_executor.as_str();
    let opencode_default = [
        handoff_runner::OPENCODE,
        handoff_runner::OPENCODE_CLI,
        crate::executors::OPENCODE_ACP,
    ]
    .contains(&default);
    let mut checks = Found::new(&mut seen);
    checks.push(data_dir(&config.data_dir).await);
    checks.push(opencode(config, opencode_default).await);
    checks.push(program("rg", &["--version"], opencode_default, "apt-get install ripgrep (OpenCode's grep/glob tools need it; without it OpenCode tries to download one)").await);
    checks.push(task_model(config));
    if let Some(check) = opencode_model(config).await {
        checks.push(check);
    }
    for check in gateway::providers(config).await {
        checks.push(check);
    }
    checks.extend(model::judge_model(config));
    checks.push(command_executor(config, default == "command"));
    checks.push(named(
        "claude",
        program(
            &config.executors.claude.binary,
            &["--version"],
            default == "claude",
            "npm install -g @anthropic-ai/claude-code (or set HANDOFF_CLAUDE_BINARY)",
        )
        .await,
    ));
    checks.push(named(
        "codex",
        program(
            &config.executors.codex.binary,
            &["--version"],
            default == "codex",
            "npm install -g @openai/codex (or set HANDOFF_CODEX_BINARY)",
        )
        .await,
    ));
    if let Some(check) = codex_tmpdir(config, default == "codex") {
        checks.push(check);
    }
    checks.extend(acp::agents(config).await);
    checks.push(
        program(
            "git",
            &["--version"],
            config.tasks.git_repository.is_some(),
            "apt-get install git (task worktrees and diffs use it)",
        )
        .await,
    );
    checks.extend(isolation(config).await);
    checks.push(letta(config).await);
    checks.push(matrix(config).await);
    checks.all
}

/// The checks done so far, each handed on as it is added.
struct Found<'a, F: FnMut(&Check)> {
    all: Vec<Check>,
    seen: &'a mut F,
}

impl<'a, F: FnMut(&Check)> Found<'a, F> {
    fn new(seen: &'a mut F) -> Self {
        Self {
            all: Vec::new(),
            seen,
        }
    }

    fn push(&mut self, check: Check) {
        (self.seen)(&check);
        self.all.push(check);
    }

    fn extend(&mut self, checks: impl IntoIterator<Item = Check>) {
        for check in checks {
            self.push(check);
        }
    }
}

/// A check named for the executor rather than the program path it ran.
fn named(name: &str, check: Check) -> Check {
    Check {
        name: name.to_owned(),
        ..check
    }
}

async fn data_dir(dir: &Path) -> Check {
    let probe = dir.join(".doctor-probe");
    let written = async {
        tokio::fs::create_dir_all(dir).await?;
        tokio::fs::write(&probe, b"ok").await?;
        tokio::fs::remove_file(&probe).await
    }
    .await;
    match written {
        Ok(()) => Check::pass("data dir", format!("{} is writable", dir.display())),
        Err(e) => Check::fail(
            "data dir",
            true,
            format!("{}: {e}", dir.display()),
            "set HANDOFF_DATA_DIR to a writable directory",
        ),
    }
}

/// First line a program prints for `args`, or why it could not run.
async fn version(program: &str, args: &[&str]) -> Result<String, String> {
    let Some(path) = find_program(program) else {
        return Err(format!("`{program}` not found on PATH"));
    };
    let output = Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(PROBE, output).await {
        Ok(Ok(out)) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            Ok(format!(
                "{} ({})",
                text.lines().next().unwrap_or("").trim(),
                path.display()
            ))
        }
        Ok(Ok(out)) => Err(format!("{} exited with {}", path.display(), out.status)),
        Ok(Err(e)) => Err(format!("{}: {e}", path.display())),
        Err(_) => Err(format!(
            "{} did not answer within {PROBE:?}",
            path.display()
        )),
    }
}

async fn program(name: &str, args: &[&str], required: bool, fix: &str) -> Check {
    match version(name, args).await {
        Ok(found) => Check::pass(name, found),
        Err(why) => Check::fail(name, required, why, fix),
    }
}

async fn opencode(config: &Config, required: bool) -> Check {
    let settings = &config.executors.opencode;
    if let Some(url) = &settings.url {
        return match reachable(&format!("{}/global/health", url.trim_end_matches('/'))).await {
            Ok(()) => Check::pass("opencode", format!("attached server at {url} answers")),
            Err(why) => Check::fail(
                "opencode",
                required,
                format!("attached server at {url}: {why}"),
                "start `opencode serve` there, or unset HANDOFF_OPENCODE_URL so Handoff starts its own",
            ),
        };
    }
    match version(&settings.binary, &["--version"]).await {
        Ok(found) => Check::pass("opencode", found),
        Err(why) => Check::fail(
            "opencode",
            required,
            why,
            "npm install -g opencode-ai (or set HANDOFF_OPENCODE_BINARY / HANDOFF_OPENCODE_URL)",
        ),
    }
}

/// Every provider `baseURL` in the inline OpenCode config answers (the scripted model server
/// in tests, a local model server in production).
async fn opencode_model(config: &Config) -> Option<Check> {
    let json = config.executors.opencode.config_json.as_deref()?;
    let parsed: Value = serde_json::from_str(json).ok()?;
    let providers = parsed.get("provider")?.as_object()?;
    let mut found = Vec::new();
    for (name, provider) in providers {
        let Some(base) = provider.pointer("/options/baseURL").and_then(Value::as_str) else {
            continue;
        };
        let url = format!("{}/models", base.trim_end_matches('/'));
        if let Err(why) = reachable(&url).await {
            return Some(Check::fail(
                "model endpoint",
                true,
                format!("provider `{name}` at {base}: {why}"),
                "start the model server the OpenCode config points at (tests: the scripted model server)",
            ));
        }
        found.push(format!("{name} at {base}"));
    }
    (!found.is_empty()).then(|| Check::pass("model endpoint", found.join(", ")))
}

fn command_executor(config: &Config, required: bool) -> Check {
    let Some(command) = &config.executors.command else {
        return Check::fail(
            "command executor",
            required,
            "not configured",
            "set HANDOFF_COMMAND_ARGV (a JSON array) to offer the `command` executor",
        );
    };
    let program = command.argv.first().map_or("", String::as_str);
    match find_program(program) {
        Some(path) => Check::pass("command executor", format!("runs {}", path.display())),
        None => Check::fail(
            "command executor",
            required,
            format!("`{program}` not found"),
            "fix HANDOFF_COMMAND_ARGV",
        ),
    }
}

/// Codex's sandbox helper lives under `CODEX_HOME`; a `TMPDIR` that contains it breaks every
/// command Codex runs.
fn codex_tmpdir(config: &Config, required: bool) -> Option<Check> {
    let home = config
        .executors
        .codex
        .home
        .clone()
        .or_else(|| std::env::var_os("CODEX_HOME").map(std::path::PathBuf::from))?;
    let tmp = std::env::temp_dir();
    let home = std::path::absolute(&home).unwrap_or(home);
    Some(if home.starts_with(&tmp) {
        Check::fail(
            "codex home",
            required,
            format!(
                "CODEX_HOME {} is inside TMPDIR {}",
                home.display(),
                tmp.display()
            ),
            "move CODEX_HOME out of TMPDIR (or point TMPDIR elsewhere)",
        )
    } else {
        Check::pass("codex home", format!("{} (outside TMPDIR)", home.display()))
    })
}

/// One check per isolation level: whether this host provides it (required when an executor
/// is configured for it).
async fn isolation(config: &Config) -> Vec<Check> {
    let config = config.clone();
    let probed = tokio::task::spawn_blocking(move || {
        let isolator = crate::isolation::isolator(&config);
        // The doctor reports every level, the container one included, whatever is configured.
        isolator
            .host()
            .docker
            .run(&crate::isolation::docker_client(&config));
        let used: Vec<IsolationLevel> = crate::isolation::levels(&config, &isolator)
            .into_iter()
            .map(|(_, level)| level)
            .collect();
        IsolationLevel::ALL
            .into_iter()
            .map(|level| (level, used.contains(&level), isolator.level(level)))
            .collect::<Vec<_>>()
    })
    .await;
    let Ok(levels) = probed else {
        return vec![Check::fail(
            "isolation",
            true,
            "the probe crashed",
            "see the log",
        )];
    };
    levels
        .into_iter()
        .map(|(level, used, available)| {
            let name = format!("isolation {level}");
            match available {
                Ok(how) => Check::pass(&name, how),
                Err(why) => Check::fail(&name, used, why, fix(level)),
            }
        })
        .collect()
}

fn fix(level: IsolationLevel) -> &'static str {
    match level {
        IsolationLevel::Sandbox => {
            "apt-get install bubblewrap, and allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1); or choose runner.isolation = process"
        }
        IsolationLevel::Container => {
            "start a Docker engine (the docker client alone is not enough); or choose another level"
        }
        _ => "run Handoff as the `handoff` program",
    }
}

async fn letta(config: &Config) -> Check {
    let Some(url) = &config.letta.api_url else {
        return Check::pass(
            "letta",
            "not configured (optional; set LETTA_API_URL to use it)",
        );
    };
    match reachable(&format!("{}/v1/health/", url.trim_end_matches('/'))).await {
        Ok(()) => Check::pass("letta", format!("{url} answers")),
        Err(why) => Check::fail(
            "letta",
            false,
            format!("{url}: {why}"),
            "start the Letta server or fix LETTA_API_URL",
        ),
    }
}

/// Matrix, when configured: the homeserver answers and the access token signs the bot in.
async fn matrix(config: &Config) -> Check {
    let matrix = &config.matrix;
    let (Some(url), Some(token)) = (&matrix.homeserver_url, &matrix.access_token) else {
        return Check::pass(
            "matrix",
            "not configured (optional; set HANDOFF_MATRIX_HOMESERVER_URL and HANDOFF_MATRIX_ACCESS_TOKEN to use it)",
        );
    };
    let whoami = format!(
        "{}/_matrix/client/v3/account/whoami",
        url.trim_end_matches('/')
    );
    match signed_in_as(&whoami, token.expose()).await {
        Ok(user) => Check::pass("matrix", format!("{url}: signed in as {user}")),
        Err(why) => Check::fail(
            "matrix",
            false,
            format!("{url}: {why}"),
            "check HANDOFF_MATRIX_HOMESERVER_URL, and that HANDOFF_MATRIX_ACCESS_TOKEN is the bot's (docs/matrix.md says how to get one)",
        ),
    }
}

/// Whom the homeserver says `token` belongs to.
async fn signed_in_as(whoami: &str, token: &str) -> Result<String, String> {
    let client = http_client(Duration::from_secs(5))?;
    let response = client
        .get(whoami)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        return Err("the access token was refused (401)".to_owned());
    }
    if !status.is_success() {
        return Err(format!("answered {status}"));
    }
    let body: serde_json::Value = response.json().await.map_err(|e| e.to_string())?;
    body.get("user_id")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "the answer names no user".to_owned())
}

/// An HTTP client whose requests give up after `timeout` (TLS through rustls's ring).
fn http_client(timeout: Duration) -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| e.to_string())
}

/// The URL answers at all (any HTTP status below 500 counts: auth may be needed).
async fn reachable(url: &str) -> Result<(), String> {
    let client = http_client(Duration::from_secs(5))?;
    match client.get(url).send().await {
        Ok(response) if response.status().is_server_error() => {
            Err(format!("answered {}", response.status()))
        }
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use handoff_config::LoadOptions;

    use super::*;

    #[tokio::test]
    async fn credentials_in_configured_urls_are_masked_in_details() {
        // Port 1 on loopback refuses at once: the failure detail quotes the URL and the error.
        let env = [
            ("LETTA_API_URL", "http://letta:letta-pw-1@127.0.0.1:1"),
            (
                "HANDOFF_OPENCODE_CONFIG",
                r#"{"provider":{"p":{"options":{"baseURL":"http://u:base-pw-2@127.0.0.1:1/v1","apiKey":"sk-3"}}}}"#,
            ),
        ];
        let config = Config::load(LoadOptions {
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..LoadOptions::default()
        })
        .unwrap();
        let letta = letta(&config).await;
        let model = opencode_model(&config).await.unwrap();
        let shown = serde_json::to_string(&[letta, model]).unwrap();
        for secret in ["letta-pw-1", "base-pw-2", "sk-3"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("127.0.0.1:1"), "{shown}");
    }
}
