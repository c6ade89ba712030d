//! The OpenCode server Handoff supervises, when processes die: the server itself mid-task, or
//! Handoff (kill -9) with the server still running.

use std::time::Duration;

use handoff_scripted_model::ScriptedModel;
use nix::{
    sys::signal::{Signal, killpg},
    unistd::Pid,
};
use serde_json::{Value, json};

use super::{
    executors::{AGENT, OPENCODE, handoff_env, script, wait_end, wait_hang_reached_model},
    harness::{Server, start, start_in},
    mcp::{call, task_id, wait_status_for},
    process::live_group_members,
    stdio::StdioServer,
    wait::{PATIENCE, wait_until},
};

fn submit(server: &Server, description: &str) -> String {
    task_id(&call(
        server,
        AGENT,
        "execute_task",
        json!({"task_description": description}),
    ))
}

/// The managed server's process group, as Handoff recorded it.
fn server_pgid(server: &Server) -> i32 {
    recorded_pgid(server.dir())
}

/// The managed server's process group, as the Handoff running in `dir` recorded it.
fn recorded_pgid(dir: &std::path::Path) -> i32 {
    let file = dir.join("data").join("opencode-server.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let record: Value = serde_json::from_str(&text).unwrap();
    let pgid = i32::try_from(record["pgid"].as_i64().unwrap()).unwrap();
    // Never a group id that would reach processes that are not the server's.
    assert!(pgid > 1, "bad pgid {pgid}");
    pgid
}

/// Signals the group directly: `kill -SIG -PGID` of procps 4.0.2 signals every process.
fn group_alive(pgid: i32) -> bool {
    !live_group_members(pgid).is_empty()
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    model: ScriptedModel,
    env: Vec<(String, String)>,
    _state: tempfile::TempDir,
}

fn setup() -> Setup {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(&OPENCODE), None))
        .unwrap();
    let env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    Setup {
        runtime,
        model,
        env,
        _state: state,
    }
}

impl Setup {
    fn env(&self) -> Vec<(&str, &str)> {
        self.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

#[test]
fn a_crashed_opencode_server_fails_its_tasks_and_is_restarted_for_the_next() {
    let setup = setup();
    let server = start(&setup.env());
    let hang = submit(&server, "HANG until the server dies");
    wait_hang_reached_model(&setup.model);
    let pgid = server_pgid(&server);
    killpg(Pid::from_raw(pgid), Signal::SIGKILL).unwrap();

    let ended = wait_end(&server, &hang);
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        ended["error"]
            .as_str()
            .unwrap()
            .contains("OpenCode server exited"),
        "{ended}"
    );

    let next = submit(&server, "CREATE-FILE after the crash");
    let done = wait_end(&server, &next);
    assert_eq!(done["status"], "completed", "{done}");
    assert_ne!(server_pgid(&server), pgid, "a new server was started");
    drop(server);
    setup.runtime.block_on(setup.model.shutdown());
}

#[test]
fn after_kill_dash_nine_the_next_handoff_stops_the_orphaned_server() {
    let setup = setup();
    let server = start(&setup.env());
    let hang = submit(&server, "HANG while Handoff dies");
    wait_hang_reached_model(&setup.model);
    let orphan = server_pgid(&server);
    let dir = server.kill9();
    assert!(
        group_alive(orphan),
        "the OpenCode server outlives a SIGKILLed Handoff"
    );

    let server = start_in(dir, &setup.env());
    let ended = wait_status_for(&server, AGENT, &hang, &["failed"], Duration::from_secs(30));
    assert_eq!(ended["error"], "interrupted: server restarted", "{ended}");
    wait_group_gone(orphan);
    let next = submit(&server, "CREATE-FILE after the restart");
    let done = wait_end(&server, &next);
    assert_eq!(done["status"], "completed", "{done}");
    drop(server);
    setup.runtime.block_on(setup.model.shutdown());
}

/// Waits until process group `pgid` is gone.
fn wait_group_gone(pgid: i32) {
    wait_until(
        "the orphaned OpenCode server to be stopped",
        PATIENCE,
        || !group_alive(pgid),
    );
}

/// The same through stdio, the way an MCP client that spawns Handoff runs it.
#[test]
fn after_kill_dash_nine_the_next_stdio_handoff_stops_the_orphaned_server() {
    let setup = setup();
    let dir = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(dir.path(), AGENT, &setup.env());
    let submitted = server.call(
        "execute_task",
        json!({"task_description": "HANG while Handoff dies"}),
    );
    let hang = submitted["task_id"].as_str().unwrap().to_owned();
    wait_hang_reached_model(&setup.model);
    let orphan = recorded_pgid(dir.path());
    server.kill9();
    drop(server);
    assert!(
        group_alive(orphan),
        "the OpenCode server outlives a SIGKILLed Handoff"
    );

    let mut server = StdioServer::start(dir.path(), AGENT, &setup.env());
    wait_group_gone(orphan);
    let ended = server.wait_status(&hang, &["failed"], Duration::from_secs(30));
    assert_eq!(ended["error"], "interrupted: server restarted", "{ended}");
    let next = server.call(
        "execute_task",
        json!({"task_description": "CREATE-FILE after the restart"}),
    );
    let next = next["task_id"].as_str().unwrap().to_owned();
    let done = server.wait_status(
        &next,
        &["completed", "failed", "cancelled", "timeout"],
        Duration::from_secs(120),
    );
    assert_eq!(done["status"], "completed", "{done}");
    drop(server);
    setup.runtime.block_on(setup.model.shutdown());
}

/// Processes whose environment has `entry` (`NAME=value`).
fn processes_with_env(entry: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == entry.as_bytes()))
        })
        .collect()
}

/// Handoff killed while its OpenCode server is still starting (crash placed right after the
/// spawn by `HANDOFF_TEST_ABORT_AT`), before the server's pid was ever known: the next start
/// stops it all the same.
#[test]
fn a_server_left_while_it_was_still_starting_is_stopped_by_the_next_start() {
    let setup = setup();
    let dir = tempfile::tempdir().unwrap();
    let mut crashing = setup.env();
    crashing.push(("HANDOFF_TEST_ABORT_AT", "after_opencode_server_spawn"));
    // The default executor is `opencode`: start-up warms its server up, and crashes there.
    let mut server = StdioServer::spawn(dir.path(), AGENT, &crashing);
    let exit = server.wait_exit(Duration::from_secs(30));
    let signal = exit.and_then(|e| std::os::unix::process::ExitStatusExt::signal(&e));
    assert_eq!(
        signal,
        Some(6),
        "Handoff did not crash at the injection point: {exit:?}"
    );
    drop(server);
    // Found by the test's own home directory, not by anything Handoff recorded.
    let home = setup
        .env
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(k, v)| format!("{k}={v}"))
        .unwrap();
    let orphans = processes_with_env(&home);
    assert!(!orphans.is_empty(), "no OpenCode server outlived the crash");

    // Tasks now default to another executor: the leftover is stopped at start-up all the same,
    // not when the first OpenCode task comes.
    let mut restart = setup.env();
    restart.extend(super::stdio::SCRIPT_EXECUTOR);
    let _server = StdioServer::start(dir.path(), AGENT, &restart);
    wait_until(
        "the server left while starting to be stopped",
        PATIENCE,
        || {
            let left: Vec<i32> = orphans
                .iter()
                .copied()
                .filter(|pid| super::stdio::process_alive(*pid))
                .collect();
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("{left:?}"))
            }
        },
    );
    drop(_server);
    setup.runtime.block_on(setup.model.shutdown());
}
