//! A graceful drain on a shared store (issue 21): SIGTERM to an instance with
//! `tasks.drain_secs` set marks it draining at once, so it claims nothing more while another
//! instance takes the queue; a run that ends within the drain ends as it would have; a run
//! still going is stopped and — having opted in — re-queued and run by the other instance.

use std::time::Duration;

use serde_json::json;

use super::{
    harness::start,
    mcp::{call, calls, task_id},
    postgres::{SCRIPT_EXECUTOR, fresh_database},
    scale::{psql, wait_count},
    wait::{PATIENCE, exit_within},
};

#[test]
fn a_draining_instance_finishes_what_it_can_and_hands_back_the_rest() {
    let url = fresh_database();
    let marks = tempfile::tempdir().unwrap();
    let mark = marks.path().join("started");
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.extend([
        ("HANDOFF_DATABASE_URL", url.as_str()),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
        ("HANDOFF_DRAIN_SECS", "8"),
        ("HANDOFF_CANCEL_GRACE_MS", "500"),
    ]);
    // The draining instance starts alone, so both tasks are its own.
    let mut draining = start(&env);
    // The short run ends once the drain has begun (the test opens its gate then); the long one
    // outlasts the drain.
    let gate = marks.path().join("draining");
    let submitted = calls(
        &draining,
        "agent-a",
        json!([
            {"name": "execute_task", "arguments": {"task_description": format!(
                "while [ ! -e {g} ]; do sleep 0.1; done; echo finished-in-drain",
                g = gate.display()
            )}},
            {"name": "execute_task", "arguments": {
                "task_description": format!(
                    "if [ -e {m} ]; then echo rerun; else touch {m}; sleep 60; fi",
                    m = mark.display()
                ),
                "requeue_on_restart": true,
            }},
        ]),
    );
    let (short, long) = (task_id(&submitted[0]), task_id(&submitted[1]));
    let both = format!(
        "SELECT COUNT(*) FROM tasks WHERE id IN ('{short}', '{long}') AND status = 'running'"
    );
    wait_count(&url, &both, 2, PATIENCE);
    let drained_id = psql(
        &url,
        &format!("SELECT ran_on FROM tasks WHERE id = '{short}'"),
    );
    let other = start(&env);

    let pid = nix::unistd::Pid::from_raw(i32::try_from(draining.child.id()).unwrap());
    let signalled = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let flagged = format!("SELECT COUNT(*) FROM instances WHERE id = '{drained_id}' AND draining");
    wait_count(&url, &flagged, 1, Duration::from_secs(5));
    std::fs::write(&gate, "").unwrap();
    // Meanwhile the queue goes to the other instance.
    let fresh = task_id(&call(
        &other,
        "agent-a",
        "execute_task",
        json!({"task_description": "echo fresh", "sync": true}),
    ));
    let fresh_ran_on = psql(
        &url,
        &format!("SELECT ran_on FROM tasks WHERE id = '{fresh}'"),
    );
    assert_ne!(
        fresh_ran_on, drained_id,
        "a draining instance claimed new work"
    );

    // The short run ended within the drain, as it would have.
    wait_count(
        &url,
        &format!("SELECT COUNT(*) FROM tasks WHERE id = '{short}' AND status = 'completed'"),
        1,
        Duration::from_secs(10),
    );
    let ended: i64 = psql(
        &url,
        &format!("SELECT completed_at FROM tasks WHERE id = '{short}'"),
    )
    .parse()
    .unwrap();
    assert!(
        ended > signalled,
        "the short run ended before the drain began"
    );
    // The long one was stopped after the drain and re-run by the other instance.
    wait_count(
        &url,
        &format!("SELECT COUNT(*) FROM tasks WHERE id = '{long}' AND status = 'completed'"),
        1,
        Duration::from_secs(30),
    );
    let outputs = psql(
        &url,
        &format!(
            "SELECT string_agg(message, ',' ORDER BY seq) FROM task_events \
             WHERE task_id = '{long}' AND kind = 'output'"
        ),
    );
    assert_eq!(outputs, "rerun");
    assert_ne!(
        psql(
            &url,
            &format!("SELECT ran_on FROM tasks WHERE id = '{long}'")
        ),
        drained_id
    );
    let status = exit_within(&mut draining.child, PATIENCE).expect("the draining instance exits");
    assert!(status.success(), "{status}");
    assert_eq!(
        psql(
            &url,
            &format!("SELECT COUNT(*) FROM instances WHERE id = '{drained_id}'")
        ),
        "0",
        "it deregistered"
    );
    drop(other);
}
