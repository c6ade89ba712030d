//! The agent baseline of the gateway's CPU target: the CPU a real coding agent, OpenCode's
//! `opencode run`, spends per model call against the scripted model called directly (not
//! through the gateway). Marginal, so the agent's start-up cancels: one run with few tool
//! turns, one with many, each run's CPU the change in this process's reaped children's CPU
//! (`RUSAGE_CHILDREN`: the agent and the children it waited for) across spawning and waiting
//! it, each run's calls the scenario's chat completions the scripted model logged meanwhile.

use std::{
    fs::File,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::Duration,
};

use handoff_scripted_model::{LoggedRequest, ScriptedModel};
use nix::sys::resource::{UsageWho, getrusage};
use serde_json::{Value, json};
use tokio::process::Command;

use super::call::{self, PROVIDER_KEY};
use crate::BenchError;

/// How long one `opencode run` may take before it is killed.
const RUN_LIMIT: Duration = Duration::from_secs(180);
/// The provider and model names OpenCode is given.
const PROVIDER: &str = "bench";
const MODEL: &str = "mock-model";

/// The agent baseline, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Baseline {
    /// Measured.
    Measured(AgentCpu),
    /// Not measured: the reason, printed instead of a figure.
    Skipped(String),
}

/// The two measured runs of the agent.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct AgentCpu {
    /// `opencode --version`.
    pub version: String,
    /// Tool turns of the short and the long run.
    pub turns: [usize; 2],
    /// Each run's CPU, user + system, in seconds.
    pub cpu_s: [f64; 2],
    /// Each run's counted calls: chat completions of its scenario.
    pub calls: [usize; 2],
    /// Each run's other requests (title generation), not counted.
    pub other: [usize; 2],
}

/// One run's figures.
struct Run {
    cpu_s: f64,
    calls: usize,
    other: usize,
}

impl Baseline {
    /// The agent's CPU per model call in µs, when measured.
    pub(super) fn per_call_us(&self) -> Option<f64> {
        match self {
            Baseline::Measured(cpu) => Some(cpu.per_call_us()),
            Baseline::Skipped(_) => None,
        }
    }

    /// The line printed under the table.
    pub(super) fn line(&self) -> String {
        let m = match self {
            Baseline::Measured(m) => m,
            Baseline::Skipped(why) => {
                return format!("agent: opencode run, CPU per model call not measured: {why}");
            }
        };
        format!(
            "agent: opencode run ({}), CPU per model call {:.3} ms (marginal over {} calls: {} vs {} tool turns; CPU {:.3} s vs {:.3} s; counted: the scenario's chat completions, {} vs {}; not counted: {} vs {} other requests, OpenCode's title)",
            m.version,
            m.per_call_us() / 1e3,
            m.calls[1] - m.calls[0],
            m.turns[1],
            m.turns[0],
            m.cpu_s[1],
            m.cpu_s[0],
            m.calls[1],
            m.calls[0],
            m.other[1],
            m.other[0]
        )
    }
}

impl AgentCpu {
    /// (cpu2 − cpu1) / (calls2 − calls1), in µs; [`judge`] made sure both grow.
    fn per_call_us(&self) -> f64 {
        (self.cpu_s[1] - self.cpu_s[0]) / (self.calls[1] - self.calls[0]) as f64 * 1e6
    }
}

/// Measures the baseline with `program` (else `opencode` on PATH): an unmeasured warm-up run
/// (a first run after a while paid ~1.5 s more system CPU, reading the binary from disk), then
/// the two measured runs.
pub(super) async fn measure(
    program: Option<&Path>,
    model: &ScriptedModel,
    turns: [usize; 2],
) -> Result<Baseline, BenchError> {
    let Some(program) = locate(program)? else {
        return Ok(Baseline::Skipped(
            "no `opencode` on PATH (give one with --agent-baseline)".to_owned(),
        ));
    };
    let version = match version(&program).await {
        Ok(version) => version,
        Err(why) => return Ok(Baseline::Skipped(why)),
    };
    let mut runs = Vec::new();
    for (i, k) in [turns[0], turns[0], turns[1]].into_iter().enumerate() {
        match run(&program, model, k).await {
            Ok(run) if i > 0 => runs.push(run),
            Ok(_) => {}
            Err(why) => return Ok(Baseline::Skipped(format!("{why} ({})", program.display()))),
        }
    }
    Ok(judge(version, turns, &runs))
}

/// The figures of two runs, or why they give none.
fn judge(version: String, turns: [usize; 2], runs: &[Run]) -> Baseline {
    let [short, long] = runs else {
        return Baseline::Skipped("not two measured runs".to_owned());
    };
    if long.calls <= short.calls {
        return Baseline::Skipped(format!(
            "the long run made {} calls, the short one {}",
            long.calls, short.calls
        ));
    }
    if long.cpu_s <= short.cpu_s {
        return Baseline::Skipped(format!(
            "the long run took no more CPU ({:.3} s) than the short one ({:.3} s)",
            long.cpu_s, short.cpu_s
        ));
    }
    Baseline::Measured(AgentCpu {
        version,
        turns,
        cpu_s: [short.cpu_s, long.cpu_s],
        calls: [short.calls, long.calls],
        other: [short.other, long.other],
    })
}

/// `program` when given (an error when it is not a file), else `opencode` on PATH, if any; as
/// an absolute path, since the agent runs in a directory of its own.
fn locate(program: Option<&Path>) -> Result<Option<PathBuf>, BenchError> {
    if let Some(program) = program {
        return if program.is_file() {
            std::path::absolute(program)
                .map(Some)
                .map_err(|source| BenchError::Io {
                    context: "finding the --agent-baseline program",
                    source,
                })
        } else {
            Err(BenchError::Setup(format!(
                "--agent-baseline {}: no such file",
                program.display()
            )))
        };
    }
    let paths = std::env::var_os("PATH").unwrap_or_default();
    Ok(std::env::split_paths(&paths)
        .map(|dir| dir.join("opencode"))
        .find(|p| p.is_file())
        .and_then(|p| std::path::absolute(p).ok()))
}

/// `opencode --version`, run in a home of its own.
async fn version(program: &Path) -> Result<String, String> {
    let sandbox = Sandbox::new().map_err(|e| format!("a temp dir: {e}"))?;
    let output = sandbox
        .command(program, &json!({}))
        .arg("--version")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), output)
        .await
        .map_err(|_| "`opencode --version` hung".to_owned())?
        .map_err(|e| format!("running `opencode --version`: {e}"))?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || version.is_empty() {
        return Err(format!("`opencode --version` failed ({})", output.status));
    }
    Ok(version)
}

/// One `opencode run` whose scenario makes `turns` tool turns, in a fresh sandbox; its CPU and
/// the scripted model's requests meanwhile.
async fn run(program: &Path, model: &ScriptedModel, turns: usize) -> Result<Run, String> {
    let sandbox = Sandbox::new().map_err(|e| format!("a temp dir: {e}"))?;
    std::fs::write(sandbox.work().join(call::AGENT_FILE), "bench\n")
        .map_err(|e| format!("writing {}: {e}", call::AGENT_FILE))?;
    let mut command = sandbox.command(program, &config(model));
    let prompt = format!("{} read the file, then answer.", call::agent_match(turns));
    command
        .args(["run", "--format", "json", &prompt])
        .stdin(Stdio::null())
        .stdout(sandbox.log("stdout")?)
        .stderr(sandbox.log("stderr")?);
    let before = model.requests().len();
    let cpu_before = children_cpu()?;
    let status = spawn_and_wait(command).await?;
    let cpu_s = children_cpu()? - cpu_before;
    let requests = model.requests();
    let new = requests.get(before..).unwrap_or_default();
    let (calls, other, last_turn) = count(new, &call::agent_match(turns));
    if !status.success() || last_turn != Some(turns) {
        return Err(format!(
            "`opencode run` of {turns} tool turns failed ({status}; last scripted turn {last_turn:?}; {calls} calls): {}",
            sandbox.tail()
        ));
    }
    Ok(Run {
        cpu_s,
        calls,
        other,
    })
}

/// Spawns `command` and waits for it; past [`RUN_LIMIT`] it is killed and the run has failed.
/// (Left in the bench's process group, so a Ctrl-C reaches it too.)
async fn spawn_and_wait(mut command: Command) -> Result<ExitStatus, String> {
    let mut child = command
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting `opencode run`: {e}"))?;
    match tokio::time::timeout(RUN_LIMIT, child.wait()).await {
        Ok(status) => status.map_err(|e| format!("waiting for `opencode run`: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            Err(format!(
                "`opencode run` did not end within {} s",
                RUN_LIMIT.as_secs()
            ))
        }
    }
}

/// User + system CPU of this process's waited-for children (and theirs), in seconds.
fn children_cpu() -> Result<f64, String> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).map_err(|e| format!("getrusage: {e}"))?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Ok(secs(usage.user_time()) + secs(usage.system_time()))
}

/// Among `requests`: chat completions of the scenario `label`, other requests, and the last
/// turn the scenario was asked for.
fn count(requests: &[LoggedRequest], label: &str) -> (usize, usize, Option<usize>) {
    let ours = |r: &&LoggedRequest| {
        r.api == handoff_scripted_model::Api::Chat && r.scenario.as_deref() == Some(label)
    };
    let calls = requests.iter().filter(ours).count();
    let last_turn = requests.iter().filter(ours).map(|r| r.turn).max();
    (calls, requests.len() - calls, last_turn)
}

/// OpenCode's config: the scripted model, called directly with the provider key, as its only
/// provider; nothing shared.
fn config(model: &ScriptedModel) -> Value {
    json!({
        "provider": {PROVIDER: {
            "npm": "@ai-sdk/openai-compatible", "name": "Bench",
            "options": {"baseURL": model.openai_base_url(), "apiKey": PROVIDER_KEY},
            "models": {MODEL: {"name": "Bench", "tool_call": true, "limit": {"context": 128000, "output": 8192}}}
        }},
        "model": format!("{PROVIDER}/{MODEL}"), "small_model": format!("{PROVIDER}/{MODEL}"),
        "autoupdate": false, "share": "disabled"
    })
}

/// A run's own temp dir: home, XDG dirs, working directory and output files, all fresh, so
/// each run starts from the same state and none reads the user's.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> std::io::Result<Self> {
        let dir = tempfile::tempdir()?;
        for sub in ["home", "config", "data", "cache", "state", "work"] {
            std::fs::create_dir(dir.path().join(sub))?;
        }
        Ok(Self { dir })
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// `program` in the working directory, its environment only PATH (OpenCode runs `rg`),
    /// the sandbox's dirs and what keeps OpenCode offline and quiet.
    fn command(&self, program: &Path, config: &Value) -> Command {
        let dir = |name: &str| self.dir.path().join(name);
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir("home"))
            .env("XDG_CONFIG_HOME", dir("config"))
            .env("XDG_DATA_HOME", dir("data"))
            .env("XDG_CACHE_HOME", dir("cache"))
            .env("XDG_STATE_HOME", dir("state"))
            // Node-style programs take their directory from PWD when it is set.
            .env("PWD", self.work())
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .env("OPENCODE_DISABLE_PROJECT_CONFIG", "1")
            .env("OPENCODE_CONFIG_CONTENT", config.to_string())
            .current_dir(self.work());
        command
    }

    /// A file for one of the run's output streams.
    fn log(&self, name: &str) -> Result<File, String> {
        File::create(self.dir.path().join(name)).map_err(|e| format!("creating {name}: {e}"))
    }

    /// The end of the run's stderr and stdout, for a failure's message.
    fn tail(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name));
        let text = [read("stderr"), read("stdout")]
            .into_iter()
            .filter_map(Result::ok)
            .collect::<Vec<_>>()
            .join("\n");
        let chars: Vec<char> = text.trim().chars().collect();
        chars[chars.len().saturating_sub(400)..].iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cpu_s: f64, calls: usize) -> Run {
        Run {
            cpu_s,
            calls,
            other: 1,
        }
    }

    #[test]
    fn the_figure_is_the_marginal_cpu_per_call() {
        let judged = judge("1.0".to_owned(), [2, 22], &[run(5.0, 3), run(6.5, 23)]);
        assert_eq!(judged.per_call_us().map(f64::round), Some(75_000.0));
        assert!(judged.line().contains("CPU per model call 75.000 ms"));
        assert!(judged.line().contains("marginal over 20 calls: 22 vs 2"));
    }

    #[test]
    fn no_figure_when_the_long_run_did_not_make_more_calls_or_take_more_cpu() {
        for runs in [[run(5.0, 3), run(6.0, 3)], [run(5.0, 3), run(4.9, 23)]] {
            let judged = judge("1.0".to_owned(), [2, 22], &runs);
            assert_eq!(judged.per_call_us(), None);
            assert!(judged.line().contains("not measured"), "{}", judged.line());
        }
    }
}
