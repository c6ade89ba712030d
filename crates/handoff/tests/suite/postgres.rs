//! `handoff serve` on PostgreSQL (`HANDOFF_DATABASE_URL`): the real binary, the real `command`
//! executor, a real PostgreSQL (`scripts/postgres/up.sh`, URL in HANDOFF_TEST_DATABASE_URL).

use std::process::Command;

use serde_json::json;

use super::{
    harness::start,
    mcp::{call, history, ok, wait_status},
};

/// Tasks are bash scripts: the description is the script.
pub(super) const SCRIPT_EXECUTOR: [(&str, &str); 4] = [
    ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
    ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
    ("HANDOFF_COMMAND_MESSAGES_VIA_STDIN", "true"),
];

/// A fresh database on the test server; its URL.
pub(super) fn fresh_database() -> String {
    let server = std::env::var("HANDOFF_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .expect(
            "HANDOFF_TEST_DATABASE_URL is not set: start a throw-away server with \
             scripts/postgres/up.sh and export the URL it prints",
        );
    let name = format!(
        "handoff_e2e_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let created = Command::new("psql")
        .args([server.as_str(), "-v", "ON_ERROR_STOP=1", "-qc"])
        .arg(format!("CREATE DATABASE {name}"))
        .output()
        .expect("psql (PostgreSQL's client) is needed to create the test database");
    assert!(
        created.status.success(),
        "CREATE DATABASE failed: {}",
        String::from_utf8_lossy(&created.stderr)
    );
    let root = server.rsplit_once('/').map_or(server.as_str(), |(r, _)| r);
    format!("{root}/{name}")
}

#[test]
fn serve_on_postgres_runs_a_task_and_a_restart_reads_it_back() {
    let url = fresh_database();
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.push(("HANDOFF_DATABASE_URL", url.as_str()));

    let server = start(&env);
    let done = call(
        &server,
        "agent-a",
        "execute_task",
        json!({"task_description": "echo hello-from-postgres", "sync": true}),
    );
    let done = ok(&done).clone();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output_tail"], json!(["hello-from-postgres"]));
    let id = done["task_id"].as_str().unwrap().to_owned();
    // The tasks went to PostgreSQL: no SQLite database was created in the data dir.
    assert!(
        !server.dir().join("data/handoff.db").exists(),
        "serve created a SQLite database although store.url names PostgreSQL"
    );
    drop(server);

    // A new instance in a new, empty directory: everything it knows comes from the database.
    let server = start(&env);
    let read = wait_status(&server, "agent-a", &id, &["completed"]);
    assert_eq!(read["exit"]["code"], 0, "{read}");
    let events = history(&server, "agent-a", &id)["events"].clone();
    let outputs: Vec<_> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "output")
        .map(|e| e["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outputs, ["hello-from-postgres"]);
    // And it keeps working: a second task on the restarted instance.
    let next = call(
        &server,
        "agent-a",
        "execute_task",
        json!({"task_description": "echo second", "sync": true}),
    );
    assert_eq!(ok(&next)["status"], "completed");
    let all = call(&server, "agent-a", "list_tasks", json!({}));
    assert_eq!(ok(&all)["tasks"].as_array().unwrap().len(), 2);
}
