//! A real coding agent steered through the instance that does not run it (issue 21): two
//! `handoff serve` on one PostgreSQL, each with its own OpenCode against the scripted model.
//! A message sent to the other instance reaches the model's next request; a permission ask is
//! answered allow and deny through the other instance, and the agent does — or does not — what
//! it asked.

use std::time::Duration;

use handoff_scripted_model::ScriptedModel;
use serde_json::json;

use super::{
    executors::{
        AGENT, OPENCODE, answer, events, handoff_env, require_ripgrep, script, wait_ask, wait_end,
        workdir,
    },
    harness::{Server, start},
    mcp::{call, calls, ok, task_id, wait_status_for},
    postgres::fresh_database,
    scale::psql,
    scale_commands::elsewhere,
    wait::{AGENT_PATIENCE, wait_until},
};

#[test]
fn opencode_is_messaged_and_answered_through_another_instance() {
    require_ripgrep();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(&OPENCODE), None))
        .unwrap();
    let url = fresh_database();
    let servers: Vec<Server> = ["a", "b"]
        .iter()
        .map(|name| {
            let home = state.path().join(name);
            let mut env = handoff_env(&OPENCODE, &model.base_url(), &home);
            env.push(("HANDOFF_DATABASE_URL".into(), url.clone()));
            // The asks wait while the test walks through the message first: they must outlast
            // that on a loaded machine (no scenario here waits for the ask timeout).
            env.retain(|(k, _)| k != "HANDOFF_ASK_TIMEOUT_SECS");
            env.push(("HANDOFF_ASK_TIMEOUT_SECS".into(), "900".into()));
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            start(&env)
        })
        .collect();
    let ids: Vec<String> = calls(
        &servers[0],
        AGENT,
        json!([
            {"name": "execute_task", "arguments": {"task_description": "WAIT-FOR-NAME then write the file"}},
            {"name": "execute_task", "arguments": {"task_description": "ASK-TOUCH allow"}},
            {"name": "execute_task", "arguments": {"task_description": "ASK-TOUCH deny"}},
        ]),
    )
    .iter()
    .map(task_id)
    .collect();
    let [multi, allow, deny] = <[String; 3]>::try_from(ids).unwrap();

    // The message: sent while the agent works, to the instance that does not run it.
    wait_status_for(
        &servers[0],
        AGENT,
        &multi,
        &["running"],
        Duration::from_secs(60),
    );
    wait_until("the agent to start its bash step", AGENT_PATIENCE, || {
        events(&servers[0], &multi)
            .iter()
            .any(|e| e["kind"] == "tool" && e["data"]["tool"] == "bash")
    });
    let via = elsewhere(&url, &servers, &multi);
    let sent = call(
        via,
        AGENT,
        "send_task_message",
        json!({"task_id": multi, "message": "NAME-IS-NOTES", "message_type": "requirement_change"}),
    );
    assert_eq!(ok(&sent)["delivered"], true, "{sent}");
    std::fs::write(workdir(via, &multi).join("release"), "").unwrap();
    assert_eq!(wait_end(via, &multi)["status"], "completed");
    assert!(workdir(via, &multi).join("notes.txt").exists());
    assert!(
        model
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains("NAME-IS-NOTES")),
        "the model never saw the message"
    );

    // The asks: answered through the other instance.
    for (id, decision) in [(&allow, "allow"), (&deny, "deny")] {
        wait_ask(&servers[0], id);
        let via = elsewhere(&url, &servers, id);
        answer(via, id, decision);
        let end = wait_end(via, id);
        let touched = workdir(via, id).join("approved.txt").exists();
        assert_eq!(touched, decision == "allow", "{decision}: {end}");
    }
    let answered = psql(
        &url,
        "SELECT string_agg(body::json->>'command', ',' ORDER BY id) FROM commands \
         WHERE reply IS NOT NULL AND body::jsonb ? 'command'",
    );
    assert_eq!(answered, "message,answer,answer");
}
