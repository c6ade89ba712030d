//! `handoff bench --executors`: the time Handoff adds to a real coding agent's run. Each task
//! creates a file through the agent's own tool against the scripted model server; measured per
//! task are the time from `execute_task` to the agent's first model request ("start") and from
//! the agent's last event to `completed` ("tail"), p50 over N tasks — next to the same agent
//! run bare from its own command line, in the same run.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use handoff_scripted_model::{LoggedRequest, Script, ScriptedModel};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::{
    BenchError,
    client::{Era, McpClient},
    target::Target,
};

/// Which agents, and how many tasks each.
#[derive(Debug, Clone)]
pub struct ExecutorBenchOptions {
    /// Executor names (`opencode`, `claude`).
    pub executors: Vec<String>,
    /// Tasks per executor (and bare runs per agent).
    pub tasks: usize,
}

/// One run's three intervals, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    start: f64,
    tail: f64,
    total: f64,
}

/// How to drive one agent.
struct Agent {
    name: &'static str,
    program: String,
    script: Value,
}

fn agent(name: &str) -> Result<Agent, BenchError> {
    let write = |tool: &str, path: &str| {
        json!({"scenarios": [{"match": "CREATE-FILE", "turns": [
            {"tool_calls": [{"name": tool, "arguments": {path: "{{cwd}}/bench.txt", "content": "bench\n"}}]},
            {"text": "Created bench.txt."}
        ]}], "default": {"text": "done"}, "untooled": {"text": "Bench"}})
    };
    let (name, program, script) = match name {
        "opencode" => ("opencode", "opencode", write("write", "filePath")),
        "claude" => ("claude", "claude", write("Write", "file_path")),
        other => {
            return Err(BenchError::Setup(format!(
                "no executor benchmark for `{other}` (opencode, claude)"
            )));
        }
    };
    let program = std::env::var(format!("HANDOFF_{}_BINARY", name.to_ascii_uppercase()))
        .unwrap_or_else(|_| program.to_owned());
    Ok(Agent {
        name,
        program,
        script,
    })
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Environment that points every agent at `model` and keeps its state in `home`.
fn agent_env(model: &ScriptedModel, home: &Path) -> Vec<(&'static str, String)> {
    let config = json!({
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": model.openai_base_url(), "apiKey": "sk-mock"},
            "models": {"mock-model": {"name": "Mock", "tool_call": true, "limit": {"context": 128000, "output": 8192}}}
        }},
        "model": "mock/mock-model", "small_model": "mock/mock-model",
        "autoupdate": false, "share": "disabled"
    });
    let dir = |name: &str| home.join(name).display().to_string();
    vec![
        ("HOME", dir("home")),
        ("XDG_CONFIG_HOME", dir("config")),
        ("XDG_DATA_HOME", dir("data")),
        ("XDG_CACHE_HOME", dir("cache")),
        ("XDG_STATE_HOME", dir("state")),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_owned()),
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

/// Requests the agent working in `cwd` made, in arrival order.
fn requests_in(model: &ScriptedModel, cwd: &str) -> Vec<LoggedRequest> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.cwd.as_deref() == Some(cwd))
        .collect()
}

/// Runs the executor benchmark and prints its table.
pub async fn run_executors(exe: &Path, options: &ExecutorBenchOptions) -> Result<(), BenchError> {
    let mut rows = Vec::new();
    for name in &options.executors {
        let agent = agent(name)?;
        let script = Script::from_json(&agent.script.to_string())
            .map_err(|e| BenchError::Setup(e.to_string()))?;
        let model = ScriptedModel::start(script, None)
            .await
            .map_err(|e| BenchError::Setup(format!("scripted model: {e}")))?;
        let home = tempfile::tempdir().map_err(|source| BenchError::Io {
            context: "creating a home dir",
            source,
        })?;
        let env = agent_env(&model, &home.path().join("handoff"));
        let handoff = through_handoff(exe, &agent, &model, &env, options.tasks).await;
        let env = agent_env(&model, &home.path().join("bare"));
        let bare = bare(&agent, &model, &env, options.tasks).await;
        model.shutdown().await;
        rows.push((agent.name, handoff?, bare?));
    }
    print_table(&rows, options.tasks);
    Ok(())
}

async fn through_handoff(
    exe: &Path,
    agent: &Agent,
    model: &ScriptedModel,
    env: &[(&'static str, String)],
    tasks: usize,
) -> Result<Vec<Sample>, BenchError> {
    let mut env = env.to_vec();
    env.push(("HANDOFF_DEFAULT_EXECUTOR", agent.name.to_owned()));
    env.push((
        if agent.name == "opencode" {
            "HANDOFF_OPENCODE_BINARY"
        } else {
            "HANDOFF_CLAUDE_BINARY"
        },
        agent.program.clone(),
    ));
    env.push(("HANDOFF_SUBMISSIONS_PER_MINUTE", "0".to_owned()));
    let target = Target::handoff(exe, &env).await?;
    let result = async {
        let http = crate::run::http()?;
        let mut client = McpClient::connect(http, &target.url, Era::Stateless, "bench-executors")
            .await
            .map_err(BenchError::Setup)?;
        // The first task also starts OpenCode's server; it is warm-up, not overhead per task.
        one_task(&mut client, model, 0).await?;
        let mut samples = Vec::with_capacity(tasks);
        for i in 1..=tasks {
            samples.push(one_task(&mut client, model, i).await?);
        }
        Ok(samples)
    }
    .await;
    target.stop().await;
    result
}

async fn one_task(
    client: &mut McpClient,
    model: &ScriptedModel,
    i: usize,
) -> Result<Sample, BenchError> {
    let submitted = now_ms();
    let task = client
        .tool(
            "execute_task",
            json!({"task_description": format!("CREATE-FILE bench {i}")}),
        )
        .await
        .map_err(BenchError::Setup)?;
    let id = task["task_id"].as_str().unwrap_or_default().to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let status = loop {
        let status = client
            .tool("get_task_status", json!({"task_id": id}))
            .await
            .map_err(BenchError::Setup)?;
        match status["status"].as_str() {
            Some("completed") => break status,
            Some("failed" | "cancelled" | "timeout") => {
                return Err(BenchError::Setup(format!("bench task ended: {status}")));
            }
            _ if tokio::time::Instant::now() > deadline => {
                return Err(BenchError::Setup(format!("bench task stuck: {status}")));
            }
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    };
    let history = client
        .tool(
            "get_task_history",
            json!({"task_id": id, "events_limit": 1000}),
        )
        .await
        .map_err(BenchError::Setup)?;
    let completed = status["completed_at_ms"].as_f64().unwrap_or(0.0);
    // The agent's last word: the last event that is not Handoff's own bookkeeping.
    let last_event = history["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| !matches!(e["kind"].as_str(), Some("status" | "log")))
        .filter_map(|e| e["at_ms"].as_f64())
        .fold(0.0, f64::max);
    let cwd = status["workdir"].as_str().unwrap_or_default();
    let first_request = requests_in(model, cwd)
        .first()
        .map_or(0.0, |r| r.ts_ms as f64);
    Ok(Sample {
        start: first_request - submitted,
        tail: completed - last_event,
        total: completed - submitted,
    })
}

/// The agent run from its own command line: start is spawn → first model request, tail is the
/// last model request → exit.
async fn bare(
    agent: &Agent,
    model: &ScriptedModel,
    env: &[(&'static str, String)],
    runs: usize,
) -> Result<Vec<Sample>, BenchError> {
    let mut samples = Vec::with_capacity(runs);
    for i in 0..=runs {
        let dir = tempfile::tempdir().map_err(|source| BenchError::Io {
            context: "creating a work dir",
            source,
        })?;
        let prompt = format!("CREATE-FILE bare {i}");
        let mut command = Command::new(&agent.program);
        match agent.name {
            "opencode" => command.args(["run", "--format", "json", &prompt]),
            _ => command.args([
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "bypassPermissions",
                &prompt,
            ]),
        };
        let started = now_ms();
        let status = command
            .current_dir(dir.path())
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            // Node-based agents take their directory from PWD when it is set.
            .env("PWD", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .status();
        let status = tokio::time::timeout(Duration::from_secs(120), status)
            .await
            .map_err(|_| BenchError::Setup(format!("bare {} run hung", agent.name)))?
            .map_err(|source| BenchError::Io {
                context: "running the agent bare",
                source,
            })?;
        let ended = now_ms();
        let cwd = canonical(dir.path());
        let requests = requests_in(model, &cwd);
        if !status.success() || !dir.path().join("bench.txt").exists() {
            return Err(BenchError::Setup(format!(
                "bare {} run failed ({status}; {} model requests from {cwd})",
                agent.name,
                requests.len()
            )));
        }
        let first = requests.first().map_or(started, |r| r.ts_ms as f64);
        let last = requests.last().map_or(ended, |r| r.ts_ms as f64);
        // Run 0 warms caches, as the first Handoff task does.
        if i > 0 {
            samples.push(Sample {
                start: first - started,
                tail: ended - last,
                total: ended - started,
            });
        }
    }
    Ok(samples)
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| PathBuf::from(path))
        .display()
        .to_string()
}

fn p50(samples: &[Sample], pick: fn(&Sample) -> f64) -> f64 {
    let mut values: Vec<f64> = samples.iter().map(pick).collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

#[allow(clippy::print_stdout)]
fn print_table(rows: &[(&str, Vec<Sample>, Vec<Sample>)], tasks: usize) {
    println!("\nexecutor overhead, p50 over {tasks} tasks (ms); bare = the agent's own CLI");
    println!(
        "{:10} {:>14} {:>12} {:>13} {:>11} {:>14} {:>12}",
        "executor",
        "handoff start",
        "bare start",
        "handoff tail",
        "bare tail",
        "handoff total",
        "bare total"
    );
    for (name, handoff, bare) in rows {
        println!(
            "{:10} {:>14.0} {:>12.0} {:>13.0} {:>11.0} {:>14.0} {:>12.0}",
            name,
            p50(handoff, |s| s.start),
            p50(bare, |s| s.start),
            p50(handoff, |s| s.tail),
            p50(bare, |s| s.tail),
            p50(handoff, |s| s.total),
            p50(bare, |s| s.total),
        );
    }
    println!(
        "start: execute_task (bare: process spawn) → first model request; tail: the agent's last event (bare: last model request) → completed (bare: process exit)"
    );
}
