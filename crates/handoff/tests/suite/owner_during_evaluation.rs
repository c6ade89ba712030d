//! The owner's word during evaluation, end to end (the real binary, the real OpenCode, the
//! scripted model): while the verify command of a finished turn runs, a message is kept and
//! delivered by resuming the OpenCode session (its instruction is carried out before the task
//! completes), and a cancel ends the evaluation at once with the verify command's processes
//! gone. The verify command waits for a file the test creates, so each step happens exactly
//! while the task is being evaluated.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use handoff_scripted_model::Script;
use serde_json::{Value, json};

use super::{
    completion::{Scripted, scripted},
    executors::{AGENT, OPENCODE, events, handoff_env, wait_end, workdir},
    harness::start,
    mcp::{call, calls, ok, task_id},
    wait::{PATIENCE, wait_until},
};

fn write(file: &str) -> Value {
    json!({"tool_calls": [{"name": "write", "arguments": {"filePath": format!("{{{{cwd}}}}/{file}"), "content": format!("{file}\n")}}]})
}

fn script() -> Script {
    let script = json!({
        "scenarios": [
            {"match": "ALSO-CHANGELOG", "turns": [write("CHANGELOG.md"), {"text": "The changelog is updated as asked."}]},
            {"match": "HELD-EVALUATION", "turns": [write("feature.txt"), {"text": "The feature file is written."}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// A verify command that marks that it runs, records its pid, then waits for `release`.
const HELD: &str =
    "echo $$ > verify.pid; touch verifying; while [ ! -f release ]; do sleep 0.1; done";

/// Waits until the task's verify command has started.
fn until_verifying(dir: &Path) {
    wait_until(
        "the verify command to start",
        Duration::from_secs(120),
        || dir.join("verifying").exists(),
    );
}

fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn messages_and_cancels_reach_a_task_under_evaluation() {
    let Scripted {
        runtime,
        state,
        model,
    } = scripted(script());
    let mut env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    // Held only when the run is evaluated, not in its run before the task starts.
    env.push(("HANDOFF_VERIFY_BEFORE_SECS".to_owned(), "0".to_owned()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let checks = json!({"policy": "checks", "verify_commands": [HELD]});
    let submitted = calls(
        &server,
        AGENT,
        json!([
            {"name": "execute_task", "arguments": {"task_description": "HELD-EVALUATION: write the feature", "completion": checks}},
            {"name": "execute_task", "arguments": {"task_description": "HELD-EVALUATION: write the feature, then wait", "completion": checks}}
        ]),
    );
    let (messaged, cancelled) = (task_id(&submitted[0]), task_id(&submitted[1]));

    // A message while the verify command runs is kept, then delivered by resuming the session.
    let dir = workdir(&server, &messaged);
    until_verifying(&dir);
    let reply = call(
        &server,
        AGENT,
        "send_task_message",
        json!({"task_id": messaged, "message": "ALSO-CHANGELOG: add a changelog entry"}),
    );
    assert!(
        ok(&reply)["note"].as_str().unwrap().starts_with("kept"),
        "{reply}"
    );
    std::fs::write(dir.join("release"), "").unwrap();
    let end = wait_end(&server, &messaged);
    assert_eq!(
        end["status"],
        "completed",
        "{end}\n{:#?}",
        events(&server, &messaged)
    );
    assert!(
        dir.join("CHANGELOG.md").exists(),
        "{:#?}",
        events(&server, &messaged)
    );
    let resumed = model.requests().iter().any(|r| {
        r.user_message
            .as_deref()
            .is_some_and(|m| m.contains("ALSO-CHANGELOG"))
    });
    assert!(resumed, "the session was never resumed with the message");

    // A cancel while the verify command runs wins at once, and the command is gone.
    let dir = workdir(&server, &cancelled);
    until_verifying(&dir);
    let pid: i32 = std::fs::read_to_string(dir.join("verify.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let asked = Instant::now();
    let reply = call(
        &server,
        AGENT,
        "send_task_control",
        json!({"task_id": cancelled, "control": "cancel", "reason": "not needed"}),
    );
    assert_eq!(
        ok(&reply)["status"],
        "cancelled",
        "{reply}\n{:#?}",
        events(&server, &cancelled)
    );
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "the cancel waited {:?} behind the evaluation",
        asked.elapsed()
    );
    wait_until(
        &format!("the verify command {pid} to end with the cancel"),
        PATIENCE,
        || !running(pid),
    );
    drop(server);
    runtime.block_on(model.shutdown());
}
