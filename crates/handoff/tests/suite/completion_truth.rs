//! Completion that tells the truth, end to end (the real binary, the real OpenCode, the scripted
//! model): a coder cut off after its tool calls (a tiny answer, an empty one, a reply truncated
//! at the output limit) is not reported completed under the default policy `checks`; a wall
//! budget stops a run while it is in progress; manager mode keeps to its turn budget.

use std::time::{Duration, Instant};

use handoff_scripted_model::Script;
use serde_json::{Value, json};

use super::{
    completion::{Scripted, completion, judged_env, scripted},
    executors::{AGENT, OPENCODE, events, wait_end},
    harness::start,
    mcp::{call, calls, ok, task_id},
};

fn write(file: &str) -> Value {
    json!({"tool_calls": [{"name": "write", "arguments": {"filePath": format!("{{{{cwd}}}}/{file}"), "content": format!("{file}\n")}}]})
}

fn done(summary: &str, requirement: &str) -> Value {
    json!({"tool_calls": [{"name": "verdict", "arguments": {
        "done": true, "confidence": 0.9, "summary": summary, "remaining": [], "continuation_prompt": "",
        "is_stuck": false, "is_progress_being_made": true, "reason": "the file exists",
        "evidence": [{"requirement": requirement, "met": true, "evidence": "the diff"}]
    }}]})
}

fn script() -> Script {
    let subtask = |id: &str, goal: &str, file: &str| json!({"id": id, "goal": goal, "success_criteria": [format!("{file} exists")], "depends_on": []});
    let ledger = json!({"tool_calls": [{"name": "ledger", "arguments": {
        "facts": ["three files are wanted"],
        "subtasks": [
            subtask("s1", "BUDGET-ONE write one.txt", "one.txt"),
            subtask("s2", "BUDGET-TWO write two.txt", "two.txt"),
            subtask("s3", "BUDGET-THREE write three.txt", "three.txt")
        ]
    }}]});
    let script = json!({
        "scenarios": [
            // The manager and its judge (Anthropic only); each asserts what it is shown.
            {"name": "ledger", "match": "MANAGED-BUDGET", "and": ["Write the task ledger", "<untrusted-"], "api": "anthropic", "turns": [ledger]},
            {"name": "judge-one", "match": "BUDGET-ONE", "and": ["Evaluation cycle: 1 of", "one.txt exists", "one.txt | +1"], "api": "anthropic", "turns": [done("one.txt written", "one.txt exists")]},
            {"name": "judge-two", "match": "BUDGET-TWO", "and": ["Evaluation cycle: 1 of", "two.txt exists", "two.txt | +1"], "api": "anthropic", "turns": [done("two.txt written", "two.txt exists")]},
            {"name": "judge-three", "match": "BUDGET-THREE", "and": ["Evaluation cycle"], "api": "anthropic", "turns": [done("three.txt written", "three.txt exists")]},
            // The coding agent.
            {"match": "Your sub-task (s1)", "turns": [write("one.txt"), {"text": "one.txt is written and checked."}]},
            {"match": "Your sub-task (s2)", "turns": [write("two.txt"), {"text": "two.txt is written and checked."}]},
            {"match": "Your sub-task (s3)", "turns": [write("three.txt"), {"text": "three.txt is written and checked."}]},
            {"name": "continue-truncated", "match": "finish reason `length`", "turns": [{"text": "I wrote cut.txt; it holds its name. Finished now."}]},
            {"match": "TINY-ANSWER", "turns": [write("tiny.txt"), {"text": "ok"}]},
            {"match": "EMPTY-ANSWER", "turns": [write("empty.txt"), {}]},
            {"match": "TRUNCATED-ANSWER", "turns": [write("cut.txt"), {"text": "I wrote cut.txt and now I will", "truncated": true}]},
            {"match": "SLOW-WALL", "turns": [write("wall-partial.txt"), {"delay_ms": 90000, "text": "finally done"}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

#[test]
fn cut_off_answers_are_not_completed_budgets_stop_runs_and_managers_keep_to_their_turns() {
    let Scripted {
        runtime,
        state,
        model,
    } = scripted(script());
    let env = judged_env(&OPENCODE, &model, state.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);

    let once = json!({"policy": "checks", "max_cycles": 1});
    let submitted = calls(
        &server,
        AGENT,
        json!([
            {"name": "execute_task", "arguments": {"task_description": "TINY-ANSWER: write tiny.txt", "completion": once}},
            {"name": "execute_task", "arguments": {"task_description": "EMPTY-ANSWER: write empty.txt", "completion": once}},
            {"name": "execute_task", "arguments": {"task_description": "TRUNCATED-ANSWER: write cut.txt"}},
            {"name": "execute_task", "arguments": {"task_description": "MANAGED-BUDGET: write one.txt, two.txt and three.txt", "completion": {"policy": "manager", "budget": {"turns": 2}}}}
        ]),
    );
    let ids: Vec<String> = submitted.iter().map(task_id).collect();
    let (tiny, empty, truncated, managed) = (&ids[0], &ids[1], &ids[2], &ids[3]);

    // (a) A tiny answer and an empty one after tool calls are cut-offs, not finishes.
    for (id, why) in [
        (tiny, "near-empty answer"),
        (empty, "without a final answer"),
    ] {
        let end = wait_end(&server, id);
        assert_eq!(end["status"], "failed", "{end}\n{:#?}", events(&server, id));
        let seen = completion(&server, id);
        assert_ne!(seen["status"], "done", "{seen}");
        assert!(seen.to_string().contains(why), "{seen}");
    }
    // A reply cut at the output limit is continued, with the cut-off named, then completes.
    let end = wait_end(&server, truncated);
    assert_eq!(
        end["status"],
        "completed",
        "{end}\n{:#?}",
        events(&server, truncated)
    );
    assert_eq!(completion(&server, truncated)["cycles"], 2);
    let requests = model.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.scenario.as_deref() == Some("continue-truncated")),
        "the continuation did not name the truncation"
    );

    // (c) Manager mode with `turns: 2`: two sub-task turns, then the budget ends it.
    let end = wait_end(&server, managed);
    assert_eq!(end["status"], "failed", "{end}");
    let seen = completion(&server, managed);
    assert_eq!(seen["status"], "budget_exhausted", "{seen}");
    let requests = model.requests();
    let coder_turns = ["s1", "s2", "s3"]
        .iter()
        .filter(|s| {
            requests.iter().any(|r| {
                r.user_message
                    .as_deref()
                    .is_some_and(|m| m.contains(&format!("Your sub-task ({s})")))
            })
        })
        .count();
    assert_eq!(coder_turns, 2, "{seen}");
    for judge in ["ledger", "judge-one", "judge-two"] {
        assert!(
            requests
                .iter()
                .any(|r| r.scenario.as_deref() == Some(judge)),
            "the {judge} request did not carry what it must see"
        );
    }

    // (b) A 115 s wall cap stops the run in progress (its model is busy for 90 s). It runs alone,
    // and the cap leaves a loaded machine's OpenCode time to make its first change.
    let submitted_at = Instant::now();
    let wall = &task_id(&call(
        &server,
        AGENT,
        "execute_task",
        json!({"task_description": "SLOW-WALL: write a file, then think", "completion": {"budget": {"wall_ms": 15000}}}),
    ));
    let end = wait_end(&server, wall);
    let waited = submitted_at.elapsed();
    assert_eq!(end["status"], "failed", "{end}");
    let ran = ok(&call(
        &server,
        AGENT,
        "get_task_status",
        json!({"task_id": wall}),
    ))["duration_ms"]
        .as_u64()
        .map(Duration::from_millis)
        .unwrap();
    // Generous for CI: three times the cap plus a fixed slack for stopping OpenCode.
    assert!(ran < Duration::from_secs(3 * 15 + 10), "ran {ran:?}");
    let budget = completion(&server, wall);
    assert_eq!(budget["status"], "budget_exhausted", "{budget}");
    let history = events(&server, wall);
    assert!(
        history.iter().any(|e| e["kind"] == "log"
            && e["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("budget exhausted: wall time 15s reached")),
        "{history:#?}"
    );
    let artifacts = ok(&call(
        &server,
        AGENT,
        "get_task_history",
        json!({"task_id": wall, "include_artifacts": true}),
    ))["artifacts"]
        .clone();
    assert!(
        artifacts.to_string().contains("wall-partial.txt"),
        "the partial diff is kept: {artifacts:#}\n{history:#?}"
    );
    eprintln!("wall budget 15 s: the run took {ran:?} ({waited:?} from submission)");

    drop(server);
    runtime.block_on(model.shutdown());
}
