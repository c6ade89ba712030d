//! Verified completion end to end: the real binary, the real OpenCode, and the scripted model
//! playing both the coding model (Chat Completions) and the judge (Anthropic Messages, a forced
//! `verdict` tool). An agent that stops after 1 of 3 files is continued in the same session with
//! a prompt naming the 2 missing files and completes on cycle 2; failing verify commands force a
//! continuation although the judge says done; an agent repeating one command is stopped as
//! stuck; a budget cap ends the task with its partial diff kept; manager mode is refused.

use handoff_scripted_model::{Api, Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    executors::{AGENT, Agent, CLAUDE, CODEX, OPENCODE, events, handoff_env, wait_end, workdir},
    harness::start,
    mcp::{call, calls, err, ok, task_id},
};

fn bash(command: &str) -> Value {
    json!({"tool_calls": [{"name": "bash", "arguments": {"command": command, "description": "scripted step"}}]})
}

fn write(file: &str) -> Value {
    json!({"tool_calls": [{"name": "write", "arguments": {"filePath": format!("{{{{cwd}}}}/{file}"), "content": format!("{file}\n")}}]})
}

/// OpenCode's `todowrite` call: the whole list, each item `(content, status)`.
fn todos(items: &[(&str, &str)]) -> Value {
    let list: Vec<Value> = items
        .iter()
        .map(
            |(content, status)| json!({"content": content, "status": status, "priority": "medium"}),
        )
        .collect();
    json!({"tool_calls": [{"name": "todowrite", "arguments": {"todos": list}}]})
}

fn verdict(done: bool, remaining: &[&str], prompt: &str) -> Value {
    json!({"tool_calls": [{"name": "verdict", "arguments": {
        "done": done, "confidence": 0.95, "summary": "scripted judge",
        "remaining": remaining, "continuation_prompt": prompt,
        "is_stuck": false, "is_progress_being_made": true,
        "reason": if done { "every requirement has evidence" } else { "files are missing" },
        "evidence": [{"requirement": "the files exist", "met": done, "evidence": "the diff"}]
    }}]})
}

fn script() -> Script {
    // Each judge answers only when the evidence it was sent shows the expected changes (the diff
    // stat naming the files, the patch's added lines, the coder's latest todo list); otherwise it
    // falls through to `default`, which is no verdict at all.
    let judge = |task: &str, cycle: u32, seen: &[&str], turn: Value| {
        let mut and = vec![format!("Evaluation cycle: {cycle} of")];
        and.extend(seen.iter().map(|s| (*s).to_owned()));
        json!({"match": task, "and": and, "api": "anthropic", "turns": [turn]})
    };
    let stuck_turns: Vec<Value> = (0..4)
        .map(|_| bash("ls /nonexistent-handoff-dir"))
        .chain([json!({"text": "I keep trying"})])
        .collect();
    let done_with = |summary: &str| {
        json!({"tool_calls": [{"name": "verdict", "arguments": {
            "done": true, "confidence": 0.9, "summary": summary, "remaining": [], "continuation_prompt": "",
            "is_stuck": false, "is_progress_being_made": true, "reason": "the file exists",
            "evidence": [{"requirement": "the file exists", "met": true, "evidence": "the diff"}]
        }}]})
    };
    let subtask = |id: &str, goal: &str, file: &str, deps: &[&str]| json!({"id": id, "goal": goal, "success_criteria": [format!("{file} exists")], "depends_on": deps});
    let ledger = json!({"tool_calls": [{"name": "ledger", "arguments": {
        "facts": ["three files are wanted"],
        "subtasks": [
            subtask("s1", "SUB-ONE write one.txt", "one.txt", &[]),
            subtask("s2", "SUB-TWO write two.txt", "two.txt", &["s1"]),
            subtask("s3", "SUB-THREE write three.txt", "three.txt", &["s2"])
        ]
    }}]});
    let script = json!({
        "scenarios": [
            // The manager and the judge (Anthropic API only).
            {"match": "MANAGED", "and": ["Write the task ledger"], "api": "anthropic", "turns": [ledger]},
            {"match": "MANAGED", "and": ["Evaluation cycle: 1 of 1", "one.txt | +1", "two.txt | +1", "three.txt | +1", "+three.txt"], "api": "anthropic", "turns": [done_with("all three files exist")]},
            {"match": "SUB-ONE", "and": ["Evaluation cycle", "one.txt | +1", "+one.txt"], "api": "anthropic", "turns": [done_with("SUMMARY-OF-ONE: one.txt written")]},
            {"match": "SUB-TWO", "and": ["Evaluation cycle", "two.txt | +1", "+two.txt"], "api": "anthropic", "turns": [done_with("two.txt written")]},
            {"match": "SUB-THREE", "and": ["Evaluation cycle", "three.txt | +1", "+three.txt"], "api": "anthropic", "turns": [done_with("three.txt written")]},
            judge("THREE-FILES", 1, &["a.txt | +1", "+a.txt", "[completed] create a.txt"], verdict(false, &["create b.txt", "create c.txt"], "CONTINUE-THREE-FILES: create b.txt and c.txt in the working directory.")),
            judge("THREE-FILES", 2, &["a.txt | +1", "b.txt | +1", "c.txt | +1", "+c.txt", "[completed] create c.txt"], verdict(true, &[], "")),
            {"match": "VERIFY-FAIL", "and": ["notes.txt | +1", "+notes.txt"], "api": "anthropic", "turns": [verdict(true, &[], "")]},
            // The coding agent.
            {"match": "Your sub-task (s1)", "turns": [write("one.txt"), {"text": "FINAL-WORDS-ONE"}]},
            {"match": "Your sub-task (s2)", "turns": [write("two.txt"), {"text": "two done"}]},
            {"match": "Your sub-task (s3)", "turns": [write("three.txt"), {"text": "three done"}]},
            {"match": "CONTINUE-THREE-FILES", "turns": [write("b.txt"), write("c.txt"), todos(&[("create a.txt", "completed"), ("create b.txt", "completed"), ("create c.txt", "completed")]), {"text": "b.txt and c.txt written"}]},
            {"match": "THREE-FILES", "turns": [write("a.txt"), todos(&[("create a.txt", "completed")]), {"text": "I created a.txt. Done."}]},
            {"match": "test -f ok.txt", "turns": [write("ok.txt"), {"text": "ok.txt is there now"}]},
            {"match": "VERIFY-FAIL", "turns": [write("notes.txt"), {"text": "All done."}]},
            {"match": "change approach", "turns": stuck_turns.clone()},
            {"match": "STUCK-LS", "turns": stuck_turns},
            {"match": "PARTIAL", "turns": [write("partial.txt"), {"text": "part of it"}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// The task's stored diff artifact (inline text).
fn diff_artifact(server: &super::harness::Server, id: &str) -> String {
    let history = ok(&call(
        server,
        AGENT,
        "get_task_history",
        json!({"task_id": id, "include_artifacts": true}),
    ))
    .clone();
    history["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["kind"] == "diff")
        .map(Value::to_string)
        .collect()
}

fn status(server: &super::harness::Server, id: &str) -> Value {
    ok(&call(
        server,
        AGENT,
        "get_task_status",
        json!({"task_id": id}),
    ))
    .clone()
}

/// The scripted model serving a test, with the runtime it runs on and the state dir its agents
/// keep their homes in.
pub(super) struct Scripted {
    pub runtime: tokio::runtime::Runtime,
    pub state: tempfile::TempDir,
    pub model: ScriptedModel,
}

/// Starts the scripted model on `script`, logging its requests into a fresh state dir.
pub(super) fn scripted(script: Script) -> Scripted {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(
            script,
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    Scripted {
        runtime,
        state,
        model,
    }
}

/// Handoff with `agent` on the scripted model, every executor permission allowed, and the same
/// model as the completion judge (Anthropic Messages).
pub(super) fn judged_env(
    agent: &Agent,
    model: &ScriptedModel,
    home: &std::path::Path,
) -> Vec<(String, String)> {
    let mut env = handoff_env(agent, &model.base_url(), home);
    env.retain(|(k, _)| k != "HANDOFF_PERMISSION_RULES");
    env.extend(
        [
            (
                "HANDOFF_PERMISSION_RULES",
                json!([{"permission": "*", "pattern": "*", "action": "allow"}]).to_string(),
            ),
            ("HANDOFF_EVALUATOR_PROVIDER", "anthropic".to_owned()),
            ("HANDOFF_EVALUATOR_MODEL", "mock-model".to_owned()),
            ("HANDOFF_EVALUATOR_BASE_URL", model.base_url()),
            ("HANDOFF_EVALUATOR_API_KEY_ENV", "MOCK_API_KEY".to_owned()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    env
}

/// The `completion` block of the task's status.
pub(super) fn completion(server: &super::harness::Server, id: &str) -> Value {
    ok(&call(
        server,
        AGENT,
        "get_task_status",
        json!({"task_id": id}),
    ))["completion"]
        .clone()
}

#[test]
fn handoff_verifies_and_continues_opencode_until_really_done() {
    let Scripted {
        runtime,
        state,
        model,
    } = scripted(script());
    let env = judged_env(&OPENCODE, &model, state.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);

    let judged = json!({"policy": "judge", "success_criteria": ["a.txt, b.txt and c.txt exist"]});
    let submitted = calls(
        &server,
        AGENT,
        json!([
            {"name": "execute_task", "arguments": {"task_description": "THREE-FILES: create a.txt, b.txt and c.txt", "completion": judged}},
            {"name": "execute_task", "arguments": {"task_description": "VERIFY-FAIL: write notes", "completion": {"policy": "judge", "verify_commands": ["test -f ok.txt"]}}},
            {"name": "execute_task", "arguments": {"task_description": "STUCK-LS: look around", "completion": {"policy": "checks", "max_cycles": 10}}},
            {"name": "execute_task", "arguments": {"task_description": "PARTIAL work", "completion": {"policy": "checks", "verify_commands": ["test -f never.txt"], "budget": {"turns": 1}}}},
            {"name": "execute_task", "arguments": {"task_description": "MANAGED: write one.txt, two.txt and three.txt", "completion": {"policy": "manager"}}}
        ]),
    );
    let (three, verify, stuck, partial) = (
        task_id(&submitted[0]),
        task_id(&submitted[1]),
        task_id(&submitted[2]),
        task_id(&submitted[3]),
    );
    let managed = task_id(&submitted[4]);

    // 1 of 3 files, then continued with a prompt naming the other two: completed on cycle 2.
    let end = wait_end(&server, &three);
    assert_eq!(
        end["status"],
        "completed",
        "{end}\n{:#?}",
        events(&server, &three)
    );
    let dir = workdir(&server, &three);
    for file in ["a.txt", "b.txt", "c.txt"] {
        assert!(dir.join(file).exists(), "{file} missing");
    }
    let completion = &status(&server, &three)["completion"];
    assert_eq!(completion["status"], "done", "{completion}");
    assert_eq!(completion["cycles"], 2, "{completion}");
    let history = events(&server, &three);
    assert!(
        history.iter().any(|e| e["kind"] == "verdict"
            && e["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("Evaluator: 2 item(s) remaining — continuing (cycle 2/5)")),
        "{history:#?}"
    );
    assert!(
        !history.iter().any(|e| e["kind"] == "message"),
        "a continuation is not a caller message"
    );
    let continued = model.requests().into_iter().any(|r| {
        r.scenario.as_deref() == Some("CONTINUE-THREE-FILES")
            && r.user_message
                .as_deref()
                .is_some_and(|m| m.contains("create b.txt") && m.contains("create c.txt"))
    });
    assert!(
        continued,
        "the continuation prompt did not name the missing files"
    );
    let judged: Vec<String> = model
        .requests()
        .into_iter()
        .filter(|r| {
            r.api == Api::Anthropic
                && r.user_message
                    .as_deref()
                    .is_some_and(|m| m.contains("THREE-FILES"))
        })
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(judged.len(), 2, "one judge request per cycle");
    assert!(
        judged.iter().all(|b| !b.contains("(no changes)")),
        "a judge was told nothing changed: {judged:#?}"
    );
    assert!(
        judged[1].contains("+a.txt") && judged[1].contains("+b.txt"),
        "cycle 2's patch lacks a cycle's changes: {}",
        judged[1]
    );
    let diff = diff_artifact(&server, &three);
    for file in ["a.txt", "b.txt", "c.txt"] {
        assert!(diff.contains(file), "the final diff lacks {file}: {diff}");
    }

    // The judge says done, the verify command fails: continued until it passes.
    let end = wait_end(&server, &verify);
    assert_eq!(
        end["status"],
        "completed",
        "{end}\n{:#?}",
        events(&server, &verify)
    );
    assert!(workdir(&server, &verify).join("ok.txt").exists());
    let completion = &status(&server, &verify)["completion"];
    assert_eq!(completion["cycles"], 2, "{completion}");
    assert!(
        completion["checks"][0]["name"] == "test -f ok.txt"
            && completion["checks"][0]["passed"] == true,
        "{completion}"
    );

    // The same failing command over and over: stuck.
    let end = wait_end(&server, &stuck);
    assert_eq!(end["status"], "failed", "{end}");
    assert!(
        end["error"].as_str().unwrap_or("").contains("stuck"),
        "{end}"
    );
    let flagged = events(&server, &stuck).into_iter().any(|e| {
        e["kind"] == "verdict"
            && e["data"]["remaining"]
                .to_string()
                .contains("change approach")
    });
    assert!(flagged, "the evaluator never flagged the repetition");
    let completion = &status(&server, &stuck)["completion"];
    assert_eq!(completion["status"], "stuck", "{completion}");
    assert_eq!(completion["cycles"], 2, "{completion}");

    // A one-turn budget: stopped with the partial work kept.
    let end = wait_end(&server, &partial);
    assert_eq!(end["status"], "failed", "{end}");
    let completion = &status(&server, &partial)["completion"];
    assert_eq!(completion["status"], "budget_exhausted", "{completion}");
    let artifacts = ok(&call(
        &server,
        AGENT,
        "get_task_history",
        json!({"task_id": partial, "include_artifacts": true}),
    ))["artifacts"]
        .clone();
    assert!(
        artifacts.to_string().contains("partial.txt"),
        "{artifacts:#}"
    );

    // Manager mode: a plan of 3 sub-tasks, each a fresh session carrying the earlier summaries
    // but not their transcripts, each verified, then the whole task.
    let end = wait_end(&server, &managed);
    assert_eq!(
        end["status"],
        "completed",
        "{end}\n{:#?}",
        events(&server, &managed)
    );
    let dir = workdir(&server, &managed);
    for file in ["one.txt", "two.txt", "three.txt"] {
        assert!(dir.join(file).exists(), "{file} missing");
    }
    assert_eq!(status(&server, &managed)["completion"]["status"], "done");
    let history = events(&server, &managed);
    assert!(
        history
            .iter()
            .any(|e| e["message"] == "step 2/3: SUB-TWO write two.txt"),
        "{history:#?}"
    );
    let second = model
        .requests()
        .into_iter()
        .find(|r| {
            r.user_message
                .as_deref()
                .is_some_and(|m| m.contains("Your sub-task (s2)"))
        })
        .expect("sub-task 2 reached the model");
    let body = second.body.to_string();
    assert!(
        body.contains("SUMMARY-OF-ONE"),
        "sub-task 2 lacks sub-task 1's summary"
    );
    assert!(
        !body.contains("FINAL-WORDS-ONE"),
        "sub-task 2 saw sub-task 1's transcript"
    );
    let third = model
        .requests()
        .into_iter()
        .find_map(|r| r.user_message.filter(|m| m.contains("Your sub-task (s3)")))
        .expect("sub-task 3 reached the model");
    assert!(
        third.contains("files: one.txt | +1 -0") && third.contains("files: two.txt | +1 -0"),
        "sub-task 3 was not given each earlier step's own files: {third}"
    );

    // Bad completion settings are refused before anything is stored.
    let refused = call(
        &server,
        AGENT,
        "execute_task",
        json!({"task_description": "x", "completion": {"policy": "judge", "max_cycles": 0}}),
    );
    assert!(
        err(&refused)["message"]
            .as_str()
            .unwrap_or("")
            .contains("max_cycles"),
        "{refused}"
    );

    drop(server);
    runtime.block_on(model.shutdown());
}

/// Claude Code (`--resume`) and Codex (`thread/resume`) continued: the judge (here on Chat
/// Completions, JSON through `response_format`) finds one of two files missing, Handoff resumes
/// the same session with the targeted prompt in a new process, and the task completes on cycle 2.
#[test]
fn claude_code_sessions_are_resumed_until_really_done() {
    resumed_until_done(&CLAUDE, "anthropic");
}

#[test]
fn codex_threads_are_resumed_until_really_done() {
    resumed_until_done(&CODEX, "responses");
}

fn resumed_until_done(agent: &Agent, agent_api: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let write =
        |file: &str| json!({"tool_calls": [(agent.write_call)(file, &format!("{file}\n"))]});
    let judge_says = |cycle: u32, done: bool, seen: &[&str]| {
        let verdict = json!({
            "done": done, "confidence": 0.95, "summary": "scripted judge",
            "remaining": if done { json!([]) } else { json!(["write y.txt"]) },
            "continuation_prompt": if done { "" } else { "RESUMED-CONTINUE: write y.txt next to x.txt." },
            "is_stuck": false, "is_progress_being_made": true, "reason": "from the diff",
            "evidence": [{"requirement": "x.txt and y.txt exist", "met": done, "evidence": "the diff"}]
        });
        let mut and = vec![format!("Evaluation cycle: {cycle} of")];
        and.extend(seen.iter().map(|s| (*s).to_owned()));
        json!({"match": "RESUMED-TWO-FILES", "and": and, "api": "chat",
               "untooled": true, "turns": [{"text": verdict.to_string()}]})
    };
    let script = json!({
        "scenarios": [
            judge_says(1, false, &["x.txt | +1", "+x.txt"]),
            judge_says(2, true, &["x.txt | +1", "y.txt | +1", "+y.txt"]),
            {"match": "RESUMED-CONTINUE", "api": agent_api, "turns": [write("y.txt"), {"text": "y.txt written"}]},
            {"match": "RESUMED-TWO-FILES", "api": agent_api, "turns": [write("x.txt"), {"text": "x.txt written, done"}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    let model = runtime
        .block_on(ScriptedModel::start(
            Script::from_json(&script.to_string()).unwrap(),
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    let mut env = handoff_env(agent, &model.base_url(), state.path());
    env.retain(|(k, _)| k != "HANDOFF_PERMISSION_RULES");
    env.extend([
        (
            "HANDOFF_PERMISSION_RULES".to_owned(),
            json!([{"permission": "*", "pattern": "*", "action": "allow"}]).to_string(),
        ),
        ("HANDOFF_EVALUATOR_PROVIDER".to_owned(), "openai".to_owned()),
        (
            "HANDOFF_EVALUATOR_MODEL".to_owned(),
            "mock-model".to_owned(),
        ),
        (
            "HANDOFF_EVALUATOR_BASE_URL".to_owned(),
            model.openai_base_url(),
        ),
        (
            "HANDOFF_EVALUATOR_API_KEY_ENV".to_owned(),
            "MOCK_API_KEY".to_owned(),
        ),
    ]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let submitted = call(
        &server,
        AGENT,
        "execute_task",
        json!({"task_description": "RESUMED-TWO-FILES: write x.txt and y.txt", "completion": {"policy": "judge"}}),
    );
    let id = task_id(&submitted);
    let end = wait_end(&server, &id);
    assert_eq!(
        end["status"],
        "completed",
        "{end}\n{:#?}",
        events(&server, &id)
    );
    let dir = workdir(&server, &id);
    assert!(dir.join("x.txt").exists() && dir.join("y.txt").exists());
    let completion = &status(&server, &id)["completion"];
    assert_eq!(
        (completion["status"].as_str(), completion["cycles"].as_u64()),
        (Some("done"), Some(2)),
        "{completion}"
    );
    drop(server);
    runtime.block_on(model.shutdown());
}

/// A judge that says not done, with the given progress flag and continuation, but only when the
/// evidence it was sent contains every string in `seen`.
fn judge_seeing(task: &str, cycle: u32, seen: &[String], progress: bool, next: &str) -> Value {
    let mut and = vec![format!("Evaluation cycle: {cycle} of")];
    and.extend(seen.iter().cloned());
    let done = next.is_empty();
    json!({"match": task, "and": and, "api": "anthropic", "turns": [{"tool_calls": [{"name": "verdict", "arguments": {
        "done": done, "confidence": 0.95, "summary": "scripted judge",
        "remaining": if done { json!([]) } else { json!([format!("{task} step {}", cycle + 1)]) },
        "continuation_prompt": next,
        "is_stuck": false, "is_progress_being_made": progress,
        "reason": if done { "every file is in the diff" } else { "more files are wanted" },
        "evidence": [{"requirement": "the files exist", "met": done, "evidence": "the diff stat"}]
    }}]}]})
}

fn evidence_script() -> Script {
    // STEADY: one new file per cycle; its judge sees every earlier cycle's files each time.
    let mut scenarios: Vec<Value> = (1..=4)
        .map(|cycle| {
            let mut seen: Vec<String> = (1..=cycle).map(|n| format!("s{n}.txt | +1")).collect();
            seen.push(format!("+s{cycle}.txt"));
            let next = if cycle == 4 {
                String::new()
            } else {
                format!("STEADY-NEXT-{}: write s{}.txt", cycle + 1, cycle + 1)
            };
            judge_seeing("STEADY", cycle, &seen, true, &next)
        })
        .collect();
    // NO-PROGRESS: nothing ever changes, and the judge sees exactly that.
    scenarios.extend((1..=5).map(|cycle| {
        let seen = ["Diff stat:\n(no changes)".to_owned()];
        judge_seeing(
            "NO-PROGRESS",
            cycle,
            &seen,
            false,
            "NO-PROGRESS-AGAIN: try again",
        )
    }));
    scenarios.extend((2..=4).map(|n| {
        json!({"match": format!("STEADY-NEXT-{n}"), "turns": [write(&format!("s{n}.txt")), {"text": "one more file"}]})
    }));
    scenarios.extend([
        json!({"match": "STEADY", "turns": [write("s1.txt"), {"text": "s1.txt written"}]}),
        json!({"match": "REQUIRES-CHANGES", "turns": [write("req.txt"), {"text": "req.txt written"}]}),
        json!({"match": "NO-PROGRESS", "turns": [{"text": "Nothing to change."}]}),
        json!({"match": "ONE-CYCLE", "turns": [{"text": "Nothing to change."}]}),
    ]);
    let script = json!({
        "scenarios": scenarios,
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// The evaluator sees every cycle's changes: a file written on the first turn satisfies
/// `requires_changes`; a coder adding one file per cycle is judged on all of them, is never told
/// it stalls, and its final diff holds every cycle; a coder changing nothing is concluded
/// `stuck` within the default 5 cycles; `cycles` counts the cycles run.
#[test]
fn the_evaluator_sees_every_cycles_changes_through_opencode() {
    let Scripted {
        runtime,
        state,
        model,
    } = scripted(evidence_script());
    let env = judged_env(&OPENCODE, &model, state.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let submitted = calls(
        &server,
        AGENT,
        json!([
            {"name": "execute_task", "arguments": {"task_description": "REQUIRES-CHANGES: write req.txt", "completion": {"policy": "checks", "requires_changes": true}}},
            {"name": "execute_task", "arguments": {"task_description": "STEADY: write s1.txt to s4.txt", "completion": {"policy": "judge"}}},
            {"name": "execute_task", "arguments": {"task_description": "NO-PROGRESS: improve things", "completion": {"policy": "judge"}}},
            {"name": "execute_task", "arguments": {"task_description": "ONE-CYCLE: write never.txt", "completion": {"policy": "checks", "verify_commands": ["test -f never.txt"], "max_cycles": 1}}}
        ]),
    );
    let ids: Vec<String> = submitted.iter().map(task_id).collect();
    let (required, steady, idle, one) = (&ids[0], &ids[1], &ids[2], &ids[3]);

    let end = wait_end(&server, required);
    let completion = &status(&server, required)["completion"];
    assert_eq!(
        (end["status"].as_str(), completion["status"].as_str()),
        (Some("completed"), Some("done")),
        "{end}\n{completion}\n{:#?}",
        events(&server, required)
    );
    assert_eq!(completion["cycles"], 1, "{completion}");

    let end = wait_end(&server, steady);
    assert_eq!(
        end["status"],
        "completed",
        "{end}\n{:#?}",
        events(&server, steady)
    );
    let completion = &status(&server, steady)["completion"];
    assert_eq!(completion["cycles"], 4, "{completion}");
    let diff = diff_artifact(&server, steady);
    for n in 1..=4 {
        assert!(
            diff.contains(&format!("s{n}.txt")),
            "final diff lacks s{n}.txt: {diff}"
        );
    }
    let requests = model.requests();
    let judged: Vec<String> = requests
        .iter()
        .filter(|r| {
            r.api == Api::Anthropic
                && r.user_message
                    .as_deref()
                    .is_some_and(|m| m.contains("STEADY"))
        })
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(judged.len(), 4, "one judge request per cycle");
    assert!(
        judged.iter().all(|b| !b.contains("The agent has stalled")),
        "a coder making progress was judged stalled"
    );
    assert!(
        !requests.iter().any(|r| r.api == Api::Chat
            && r.user_message
                .as_deref()
                .is_some_and(|m| m.contains("STEADY-NEXT") && m.contains("not making progress"))),
        "a coder making progress was told it is not"
    );

    let end = wait_end(&server, idle);
    assert_eq!(end["status"], "failed", "{end}");
    let completion = &status(&server, idle)["completion"];
    assert_eq!(
        (completion["status"].as_str(), completion["cycles"].as_u64()),
        // The detector fires on the third identical message, after the re-plan: stuck at once.
        (Some("stuck"), Some(3)),
        "{completion}"
    );

    let end = wait_end(&server, one);
    assert_eq!(end["status"], "failed", "{end}");
    let completion = &status(&server, one)["completion"];
    assert_eq!(
        (completion["status"].as_str(), completion["cycles"].as_u64()),
        (Some("max_cycles"), Some(1)),
        "{completion}"
    );

    drop(server);
    runtime.block_on(model.shutdown());
}
