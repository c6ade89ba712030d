//! The OpenCode server Handoff supervises, when processes die: the server itself mid-task, or
//! Handoff (kill -9) with the server still running.

use std::time::{Duration, Instant};

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
    let file = server.dir().join("data").join("opencode-server.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let record: Value = serde_json::from_str(&text).unwrap();
    let pgid = i32::try_from(record["pgid"].as_i64().unwrap()).unwrap();
    // Never a group id that would reach processes that are not the server's.
    assert!(pgid > 1, "bad pgid {pgid}");
    pgid
}

/// Signals the group directly: `kill -SIG -PGID` of procps 4.0.2 signals every process.
fn group_alive(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None).is_ok()
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
    let deadline = Instant::now() + Duration::from_secs(15);
    while group_alive(orphan) {
        assert!(
            Instant::now() < deadline,
            "the orphaned OpenCode server is still running"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let next = submit(&server, "CREATE-FILE after the restart");
    let done = wait_end(&server, &next);
    assert_eq!(done["status"], "completed", "{done}");
    drop(server);
    setup.runtime.block_on(setup.model.shutdown());
}
