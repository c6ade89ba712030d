//! Letta with several instances on one PostgreSQL (issue 21), against the real Letta: a
//! task's block has one writer — the instance running it; the other, whose sweeper sees the
//! same records, writes nothing — and when the running instance is killed, the survivor that
//! takes the task over writes its final state and sends the one notification.

use std::time::Duration;

use serde_json::json;

use super::{
    harness::{Server, metric},
    letta::{
        LETTA_PATIENCE, create_agent, env, eventually, letta_url, notifications, start_with,
        wait_no_notification_owed, wait_runs_ended,
    },
    mcp::{call, task_id},
    postgres::fresh_database,
    scale::{psql, wait_count},
    wait::{PATIENCE, wait_until},
};

#[test]
fn a_task_block_has_one_writer_and_one_notification_when_its_task_moves() {
    let agent = create_agent("scale-letta");
    let url = fresh_database();
    let env = env(
        letta_url(),
        &[
            ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
            ("HANDOFF_HEARTBEAT_MS", "200"),
            ("HANDOFF_LEASE_EXPIRY_MS", "1000"),
        ],
    );
    let mut env = env;
    env.push(("HANDOFF_DATABASE_URL", url.clone()));
    // The running instance starts alone, so the task is its own.
    let running = start_with(&env);
    let task = task_id(&call(
        &running,
        &agent,
        "execute_task",
        json!({"task_description": "echo started; sleep 120"}),
    ));
    let survivor: Server = start_with(&env);
    let writes = |server: &Server| metric(server, "handoff_letta_block_writes_total");
    eventually(
        "the running instance's block writes",
        LETTA_PATIENCE,
        || (writes(&running) >= 1.0).then_some(()),
    );
    // Several sweeps of the survivor (every second) see the record; none writes it. Its own
    // heartbeats show four of its seconds going by.
    let beat = format!(
        "SELECT heartbeat FROM instances WHERE pid = {}",
        survivor.child.id()
    );
    let heartbeat = || -> i64 { psql(&url, &beat).parse().unwrap() };
    let first = heartbeat();
    wait_until(
        "four seconds of the survivor's heartbeats",
        PATIENCE,
        || {
            let beaten = heartbeat() - first;
            if beaten >= 4_000 { Ok(()) } else { Err(beaten) }
        },
    );
    assert_eq!(
        writes(&survivor),
        0.0,
        "the survivor wrote a block it does not own"
    );

    let running_id = psql(
        &url,
        &format!("SELECT owner FROM tasks WHERE id = '{task}'"),
    );
    let _dir = running.kill9();
    wait_count(
        &url,
        &format!(
            "SELECT COUNT(*) FROM tasks WHERE id = '{task}' AND status = 'failed' \
             AND error = 'interrupted: instance {running_id} lost'"
        ),
        1,
        Duration::from_secs(15),
    );
    eventually("the one notification", LETTA_PATIENCE, || {
        (notifications(&agent, &task) == 1).then_some(())
    });
    assert!(
        writes(&survivor) >= 1.0,
        "the survivor wrote the final state"
    );
    assert_eq!(
        metric(&survivor, "handoff_letta_notifications_sent_total"),
        1.0
    );
    // And no second one: the survivor owes none, and all that was sent has landed.
    wait_no_notification_owed(&survivor);
    wait_runs_ended(&agent);
    assert_eq!(notifications(&agent, &task), 1);
}
