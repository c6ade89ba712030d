//! An instance on a shared store restarted on its data dir (issue 21): the new process knows
//! its predecessor from the data dir and takes its tasks over at once — the restart rules
//! apply within seconds, not after the lease expiry (a minute here) — and removes its
//! registration.

use std::time::Duration;

use serde_json::json;

use super::{
    harness::{start, start_in},
    mcp::{calls, task_id},
    postgres::{SCRIPT_EXECUTOR, fresh_database},
    scale::{processes_with_env, psql, wait_count},
};

#[test]
fn a_restarted_instance_takes_its_own_tasks_back_at_once() {
    let url = fresh_database();
    let marks = tempfile::tempdir().unwrap();
    let mark = marks.path().join("started");
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.extend([
        ("HANDOFF_DATABASE_URL", url.as_str()),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
        ("HANDOFF_LEASE_EXPIRY_MS", "60000"),
    ]);
    let server = start(&env);
    let ids: Vec<String> = calls(
        &server,
        "agent-a",
        json!([
            {"name": "execute_task", "arguments": {"task_description": "echo first; sleep 60"}},
            {"name": "execute_task", "arguments": {
                "task_description": format!(
                    "if [ -e {m} ]; then echo rerun; else touch {m}; echo first; sleep 60; fi",
                    m = mark.display()
                ),
                "requeue_on_restart": true,
            }},
        ]),
    )
    .iter()
    .map(task_id)
    .collect();
    let list = format!("'{}', '{}'", ids[0], ids[1]);
    wait_count(
        &url,
        &format!(
            "SELECT COUNT(*) FROM task_events WHERE task_id IN ({list}) AND message LIKE '%first%'"
        ),
        2,
        Duration::from_secs(30),
    );
    let before = psql(&url, "SELECT id FROM instances");
    let dir = server.kill9();

    let restarted = start_in(dir, &env);
    wait_count(
        &url,
        &format!(
            "SELECT COUNT(*) FROM tasks WHERE id = '{}' AND status = 'failed' \
             AND error = 'interrupted: server restarted'",
            ids[0]
        ),
        1,
        Duration::from_secs(20),
    );
    wait_count(
        &url,
        &format!(
            "SELECT COUNT(*) FROM tasks WHERE id = '{}' AND status = 'completed'",
            ids[1]
        ),
        1,
        Duration::from_secs(20),
    );
    for id in &ids {
        let left = processes_with_env(&format!("HANDOFF_TASK_ID={id}"));
        assert!(left.is_empty(), "the old run of {id} survived: {left:?}");
    }
    let now = psql(&url, "SELECT id FROM instances");
    assert_ne!(
        now, before,
        "the predecessor is gone, its successor registered"
    );
    assert_eq!(now.lines().count(), 1, "{now}");
    drop(restarted);
}
