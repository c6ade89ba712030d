//! The agent run from its own command line: start is spawn → first model request, tail is the
//! last model request → exit.

use std::{path::Path, process::Stdio, time::Duration};

use handoff_scripted_model::ScriptedModel;
use tokio::process::Command;

use super::{Sample, agents::Kind, canonical, now_ms, requests_in};
use crate::BenchError;

/// `runs` bare runs of `kind`'s CLI after one warm-up, the agent's state under `home`.
pub(super) async fn runs(
    kind: Kind,
    model: &ScriptedModel,
    home: &Path,
    runs: usize,
) -> Result<Vec<Sample>, BenchError> {
    let env = super::agents::bare_env(kind, model, home)?;
    let program = kind.bare_program()?;
    let mut samples = Vec::with_capacity(runs);
    for i in 0..=runs {
        let sample = one_run(kind, &program, model, &env, i).await?;
        // Run 0 warms caches, as the first Handoff task does.
        if i > 0 {
            samples.push(sample);
        }
    }
    Ok(samples)
}

async fn one_run(
    kind: Kind,
    program: &str,
    model: &ScriptedModel,
    env: &[(&'static str, String)],
    i: usize,
) -> Result<Sample, BenchError> {
    let dir = tempfile::tempdir().map_err(|source| BenchError::Io {
        context: "creating a work dir",
        source,
    })?;
    let started = now_ms();
    let status = Command::new(program)
        .args(kind.bare_args(&format!("CREATE-FILE bare {i}")))
        .current_dir(dir.path())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        // Node-based agents take their directory from PWD when it is set.
        .env("PWD", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status();
    let name = kind.executor();
    let status = tokio::time::timeout(Duration::from_secs(120), status)
        .await
        .map_err(|_| BenchError::Setup(format!("bare {name} run hung")))?
        .map_err(|source| BenchError::Io {
            context: "running the agent bare",
            source,
        })?;
    let ended = now_ms();
    let cwd = canonical(dir.path());
    let requests = requests_in(model, &cwd);
    if !status.success() || !dir.path().join("bench.txt").exists() {
        return Err(BenchError::Setup(format!(
            "bare {name} run ({program}) failed ({status}; {} model requests from {cwd})",
            requests.len()
        )));
    }
    let first = requests.first().map_or(started, |r| r.ts_ms as f64);
    let last = requests.last().map_or(ended, |r| r.ts_ms as f64);
    Ok(Sample {
        start: first - started,
        tail: ended - last,
        total: ended - started,
    })
}
