//! The pool's own behaviour against a minimal ACP agent (a Python script that answers
//! `initialize` and `session/new` and records the directories its sessions were opened in):
//! filling, claiming, refilling, and stopping what is not used.

#![allow(clippy::unwrap_used)]

use std::{path::Path, sync::Arc};

use super::pool::{Pool, PoolSettings};
use crate::{CommandConfig, CommandExecutor, MessageFormat, PromptVia};

/// Answers each request; `session/new` cwds are appended to `$SESSIONS`.
const AGENT: &str = r#"
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": 1, "agentInfo": {"name": "fake", "version": "0"}}
    elif msg["method"] == "session/new":
        with open(os.environ["SESSIONS"], "a") as f:
            f.write(msg["params"]["cwd"] + "\n")
        result = {"sessionId": "s1"}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

fn pool(root: &Path, sessions: &Path, script: &str, warm_in_place: bool) -> Arc<Pool> {
    let process = CommandExecutor::new(CommandConfig {
        argv: vec!["python3".into(), "-c".into(), script.into()],
        prompt_via: PromptVia::Stdin,
        messages_via_stdin: true,
        env: vec![("SESSIONS".into(), sessions.display().to_string())],
        message_format: MessageFormat::Raw,
        isolation: None,
    })
    .unwrap();
    let settings = PoolSettings {
        size: 1,
        root: root.to_owned(),
        warm_in_place,
    };
    let warmed = Arc::new(tokio::sync::Mutex::new(false));
    let launcher = crate::agent_home::Launcher {
        process,
        homes: None,
    };
    Arc::new(Pool::new(settings, "fake".into(), launcher, false, warmed))
}

/// Waits until `done` holds of `pool`; a failure shows its counts, starts and failed starts.
async fn until(what: &str, pool: &Pool, done: impl Fn(&Pool) -> bool) {
    crate::test_waits::until(what, || {
        if done(pool) {
            Ok(())
        } else {
            Err((pool.counts(), pool.starting(), pool.failed_starts()))
        }
    })
    .await;
}

#[tokio::test]
async fn a_claimed_agent_is_replaced_and_an_unused_one_stopped() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions.txt");
    let pool = pool(root.path(), &sessions, AGENT, true);
    assert_eq!(pool.counts(), (0, 1));
    pool.fill();
    until("the pool filled", &pool, |p| p.counts() == (1, 1)).await;

    let claim = pool.claim().unwrap();
    let dir = claim.workdir().to_owned();
    let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        name.starts_with(&format!("pool-{}-", std::process::id())),
        "{name}"
    );
    assert!(dir.is_dir());
    // The warm-up session ran in the agent's own directory.
    let opened = std::fs::read_to_string(&sessions).unwrap();
    assert_eq!(opened.lines().next(), Some(dir.to_str().unwrap()));
    // Its replacement starts at once.
    until("the pool refilled", &pool, |p| p.counts() == (1, 1)).await;

    let parts = claim.take().unwrap();
    assert!(parts.control.is_running());
    assert_eq!(parts.init["agentInfo"]["name"], "fake");
    assert!(
        parts
            .preface
            .iter()
            .any(|e| matches!(e, crate::RunEvent::Event(ev) if ev.message == "process started"))
    );
    parts.control.kill().unwrap();

    // An agent nobody claims is stopped when the pool closes, and its empty directory goes.
    let waiting = pool.claim().unwrap();
    let waiting_dir = waiting.workdir().to_owned();
    drop(waiting);
    assert!(!waiting_dir.exists());
    pool.close();
    assert_eq!(pool.counts(), (0, 1));
    // The replacement started for `waiting` ends on its own time; a closed pool keeps it out.
    until("the replacement's start to end", &pool, |p| {
        p.starting() == 0
    })
    .await;
    assert_eq!(pool.counts(), (0, 1), "a closed pool kept an agent");
    pool.fill();
    assert_eq!(pool.starting(), 0, "a closed pool started an agent");
    assert_eq!(pool.counts(), (0, 1), "a closed pool started an agent");
}

#[tokio::test]
async fn an_agent_that_dies_before_it_is_ready_is_never_handed_out() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions.txt");
    let pool = pool(root.path(), &sessions, "import sys; sys.exit(3)", false);
    pool.fill();
    until("the start failed", &pool, |p| p.failed_starts() >= 1).await;
    // The failed start leaves no directory behind, and no agent to claim.
    assert!(pool.claim().is_none());
    pool.close();
    let left: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pool-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn a_claim_waits_for_the_agent_starting_rather_than_start_another() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions.txt");
    let release = root.path().join("release");
    // The agent answers nothing until the test creates `release`.
    let held = format!(
        "import os, time\nwhile not os.path.exists({:?}): time.sleep(0.05)\n{AGENT}",
        release.display().to_string()
    );
    let pool = pool(root.path(), &sessions, &held, false);
    pool.fill();
    assert_eq!(pool.starting(), 1);
    let claim = tokio::spawn({
        let pool = Arc::clone(&pool);
        async move {
            pool.claim_waiting(std::time::Duration::from_secs(120))
                .await
        }
    });
    tokio::task::yield_now().await;
    assert!(
        !claim.is_finished(),
        "the claim waits for the starting agent"
    );
    assert_eq!(pool.starting(), 1, "no second agent is started for it");
    std::fs::write(&release, "").unwrap();
    let claim = claim.await.unwrap().expect("the agent that was starting");
    assert!(claim.workdir().is_dir());
    drop(claim);
    pool.close();
}

#[tokio::test]
async fn a_claim_waiting_for_an_agent_that_dies_gets_none() {
    let root = tempfile::tempdir().unwrap();
    let sessions = root.path().join("sessions.txt");
    let pool = pool(root.path(), &sessions, "import sys; sys.exit(3)", false);
    pool.fill();
    // Not the whole patience: the first failed start ends the wait.
    let claim = pool
        .claim_waiting(std::time::Duration::from_secs(600))
        .await;
    assert!(claim.is_none());
    assert!(pool.failed_starts() >= 1);
    pool.close();
}
