//! The tool pipeline end to end through the real binary, the real OpenCode and the scripted
//! model: a configured deny stops `rm` before it runs (and the model is told), a compound
//! command is judged part by part, a project approval of `ls *` works in later tasks yet never
//! lifts a configured deny, a PreToolUse hook blocks `curl`, every decision is in the audit
//! trail, and an agent with a blanket deny on a tool does not see it.

use std::time::Duration;

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    executors::{AGENT, OPENCODE, events, handoff_env, wait_end, workdir},
    harness::start,
    mcp::{call, calls, err, ok, task_id, wait_status_for},
    raw_mcp::Raw2026,
};

fn bash(command: &str) -> Value {
    json!({"tool_calls": [{"name": "bash", "arguments": {"command": command, "description": "scripted step"}}]})
}

fn write(file: &str, content: &str) -> Value {
    json!({"tool_calls": [{"name": "write", "arguments": {"filePath": format!("{{{{cwd}}}}/{file}"), "content": content}}]})
}

fn script() -> Script {
    let script = json!({
        "scenarios": [
            {"match": "RM-DENIED", "turns": [write("keep.txt", "keep me\n"), bash("rm -rf {{cwd}}/keep.txt"), {"text": "finished after rm, and there is nothing to change in the files"}]},
            {"match": "COMPOUND", "turns": [write("x.txt", "x\n"), bash("git status && rm {{cwd}}/x.txt"), {"text": "finished after compound, and there is nothing to change in the files"}]},
            {"match": "LS-PLAIN", "turns": [bash("ls {{cwd}}"), {"text": "listed, and there is nothing to change in the files"}]},
            {"match": "LS-SECRET", "turns": [bash("ls {{cwd}}/secret-notes"), {"text": "tried the secret, and there is nothing to change in the files"}]},
            {"match": "CURL-HOOK", "turns": [bash("curl -s http://127.0.0.1:9/blocked"), {"text": "tried curl; the hook decided whether it could run"}]},
            {"match": "LOOP", "turns": [
                bash("echo same-step"), bash("echo same-step"), bash("echo same-step"),
                bash("echo same-step"), bash("echo same-step"), bash("echo same-step"),
                bash("echo same-step"), bash("echo same-step"), bash("echo same-step"),
                {"text": "never reached, and there is nothing to change in the files"}
            ]}
        ],
        "default": {"text": "No scenario matched: the script's default reply, nothing to change"},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// The Input events that settled a request, as (decision, by, reason).
fn decisions(server: &super::harness::Server, id: &str) -> Vec<(String, String, String)> {
    events(server, id)
        .iter()
        .filter(|e| e["kind"] == "input" && e["data"]["state"] == "answered")
        .map(|e| {
            let text = |k: &str| e["data"][k].as_str().unwrap_or_default().to_owned();
            (text("decision"), text("by"), text("reason"))
        })
        .collect()
}

fn audit(server: &super::harness::Server, id: &str) -> Vec<Value> {
    let result = call(server, AGENT, "get_audit_log", json!({"task_id": id}));
    ok(&result)["records"].as_array().unwrap().clone()
}

#[test]
fn rules_hooks_and_approvals_decide_opencodes_tool_calls() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(
            script(),
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    let hook_log = state.path().join("hook-inputs.jsonl");
    let hook = state.path().join("no-curl.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' \"$input\" >> {}\ncase \"$input\" in *curl*) echo 'curl is blocked by the no-curl hook' >&2; exit 2;; esac\nexit 0\n",
            hook_log.display()
        ),
    )
    .unwrap();
    let rules = json!([
        {"permission": "*", "pattern": "*", "action": "allow"},
        {"permission": "bash", "pattern": "rm *", "action": "deny"},
        {"permission": "bash", "pattern": "ls *", "action": "ask"},
        {"permission": "bash", "pattern": "ls *secret*", "action": "deny"}
    ]);
    let hooks = json!([{"event": "PreToolUse", "matcher": "Bash", "command": format!("sh {}", hook.display()), "timeout_secs": 20}]);
    let tool_rules = json!([
        {"permission": "send_task_control", "pattern": "*", "action": "deny", "agent": "agent-restricted"}
    ]);
    let mut env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    // The `ls` request waits while the loop-guard tasks run first: on a loaded machine that
    // can take longer than the shared 60 s ask timeout, whose deny would end the task early.
    let waits = [
        "HANDOFF_PERMISSION_RULES",
        "HANDOFF_ASK_TIMEOUT_SECS",
        "HANDOFF_TASK_TIMEOUT_MS",
    ];
    env.retain(|(k, _)| !waits.contains(&k.as_str()));
    env.push(("HANDOFF_PERMISSION_RULES".into(), rules.to_string()));
    env.push(("HANDOFF_ASK_TIMEOUT_SECS".into(), "900".into()));
    env.push(("HANDOFF_TASK_TIMEOUT_MS".into(), "1200000".into()));
    env.push(("HANDOFF_HOOKS".into(), hooks.to_string()));
    env.push((
        "HANDOFF_TOOL_PERMISSION_RULES".into(),
        tool_rules.to_string(),
    ));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);

    // An agent with a blanket deny on send_task_control does not see it, nor can call it.
    let listed =
        Raw2026::new(&server.url, "agent-restricted").request("tools/list", None, json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&"send_task_control"), "{names:?}");
    assert!(names.contains(&"execute_task"), "{names:?}");
    let others = Raw2026::new(&server.url, AGENT).request("tools/list", None, json!({}));
    assert!(others.to_string().contains("send_task_control"));
    let refused = Raw2026::new(&server.url, "agent-restricted").request(
        "tools/call",
        Some("send_task_control"),
        json!({"name": "send_task_control", "arguments": {"task_id": "task_aaaaaaaaaaaaaaaaaaaaaaaaaa", "control": "cancel"}}),
    );
    assert_eq!(
        refused["error"]["data"]["code"], "UNKNOWN_TOOL",
        "{refused}"
    );

    let submitted = calls(
        &server,
        AGENT,
        json!([
            {"name": "execute_task", "arguments": {"task_description": "RM-DENIED please"}},
            {"name": "execute_task", "arguments": {"task_description": "COMPOUND please"}},
            {"name": "execute_task", "arguments": {"task_description": "CURL-HOOK please"}},
            {"name": "execute_task", "arguments": {"task_description": "LS-PLAIN first"}},
            {"name": "execute_task", "arguments": {"task_description": "LOOP forever"}}
        ]),
    );
    let ids: Vec<String> = submitted.iter().map(task_id).collect();
    let (rm, compound, curl, ls_first, looping) = (&ids[0], &ids[1], &ids[2], &ids[3], &ids[4]);

    // `rm -rf` denied by configuration: never runs, the model is told, the audit says why.
    let end = wait_end(&server, rm);
    assert_eq!(
        end["status"],
        "completed",
        "{end}\n{:#?}",
        events(&server, rm)
    );
    assert!(workdir(&server, rm).join("keep.txt").exists(), "rm ran");
    let rm_decisions = decisions(&server, rm);
    assert!(
        rm_decisions.iter().any(|(d, by, reason)| d == "deny"
            && by.starts_with("policy")
            && reason.contains("rm *")),
        "{rm_decisions:?}"
    );
    let told = model.requests().into_iter().any(|r| {
        r.scenario.as_deref() == Some("RM-DENIED")
            && r.turn == 2
            && r.body.to_string().contains("rm *")
    });
    assert!(told, "the model never saw the denial");
    let records = audit(&server, rm);
    assert!(
        records.iter().any(|r| r["source"] == "executor"
            && r["outcome"] == "deny"
            && r["stage"] == "permission"),
        "{records:#?}"
    );

    // `git status && rm x`: the rm part denies the whole command.
    let end = wait_end(&server, compound);
    assert_eq!(end["status"], "completed", "{end}");
    assert!(
        workdir(&server, compound).join("x.txt").exists(),
        "the compound command ran"
    );
    assert!(
        decisions(&server, compound)
            .iter()
            .any(|(d, _, r)| d == "deny" && r.contains("rm ")),
        "{:?}",
        decisions(&server, compound)
    );

    // A PreToolUse hook blocks curl; it saw Claude Code's input shape.
    let end = wait_end(&server, curl);
    assert_eq!(end["status"], "completed", "{end}");
    let curl_decisions = decisions(&server, curl);
    assert!(
        curl_decisions
            .iter()
            .any(|(d, by, r)| d == "deny" && by == "policy (hook)" && r.contains("no-curl hook")),
        "{curl_decisions:?}"
    );
    let seen: Vec<Value> = std::fs::read_to_string(&hook_log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let curl_input = seen
        .iter()
        .find(|v| {
            v["tool_input"]["command"]
                .as_str()
                .is_some_and(|c| c.contains("curl"))
        })
        .unwrap_or_else(|| panic!("{seen:#?}"));
    assert_eq!(curl_input["hook_event_name"], "PreToolUse");
    assert_eq!(curl_input["tool_name"], "Bash");
    assert_eq!(curl_input["session_id"], curl.as_str());

    // The same call over and over: warned, then denied, then stopped as stuck.
    let end = wait_end(&server, looping);
    assert_eq!(end["status"], "failed", "{end}");
    assert!(
        end["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("stuck: loop guard"),
        "{end}"
    );
    let levels: Vec<String> = events(&server, looping)
        .iter()
        .filter_map(|e| e["data"]["loop_guard"].as_str().map(str::to_owned))
        .collect();
    assert!(
        levels.contains(&"warn".to_owned()) && levels.contains(&"deny".to_owned()),
        "{levels:?}"
    );
    assert_eq!(
        levels.last().map(String::as_str),
        Some("stop"),
        "{levels:?}"
    );
    assert!(
        decisions(&server, looping)
            .iter()
            .any(|(d, by, _)| d == "deny" && by == "policy (loop_guard)"),
        "{:?}",
        decisions(&server, looping)
    );

    // `ls` asks; the owner approves `ls *` for the project.
    let asked = wait_status_for(
        &server,
        AGENT,
        ls_first,
        &["input_required", "completed", "failed"],
        Duration::from_secs(60),
    );
    assert_eq!(asked["status"], "input_required", "{asked}");
    let approval = json!({"decision": "allow", "scope": "project", "patterns": ["ls *"]});
    let answered = call(
        &server,
        AGENT,
        "send_task_message",
        json!({"task_id": ls_first, "message": approval.to_string(), "message_type": "approval"}),
    );
    assert_eq!(ok(&answered)["delivered"], true, "{answered}");
    assert_eq!(wait_end(&server, ls_first)["status"], "completed");
    let approvals = ok(&call(&server, AGENT, "list_approvals", json!({}))).clone();
    let list = approvals["approvals"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{approvals}");
    assert_eq!(list[0]["pattern"], "ls *");
    assert_eq!(list[0]["scope"], "project");

    // A later task: the approval spares the prompt for `ls`, but not the configured deny.
    let later = calls(
        &server,
        AGENT,
        json!([
            {"name": "execute_task", "arguments": {"task_description": "LS-PLAIN again"}},
            {"name": "execute_task", "arguments": {"task_description": "LS-SECRET now"}}
        ]),
    );
    let (ls_again, secret) = (task_id(&later[0]), task_id(&later[1]));
    let end = wait_end(&server, &ls_again);
    assert_eq!(end["status"], "completed", "{end}");
    let again = decisions(&server, &ls_again);
    assert!(
        again
            .iter()
            .any(|(d, by, _)| d == "allow" && by == "policy (approval)"),
        "{again:?}"
    );
    assert!(
        !events(&server, &ls_again)
            .iter()
            .any(|e| e["data"]["state"] == "pending")
    );
    let end = wait_end(&server, &secret);
    assert_eq!(end["status"], "completed", "{end}");
    let denied = decisions(&server, &secret);
    assert!(
        denied
            .iter()
            .any(|(d, _, r)| d == "deny" && r.contains("*secret*")),
        "{denied:?}"
    );
    assert!(
        !events(&server, &secret)
            .iter()
            .any(|e| e["data"]["state"] == "pending"),
        "asked although denied"
    );

    // Revoking: the approval is gone.
    let id = list[0]["id"].as_str().unwrap();
    let revoked = call(
        &server,
        AGENT,
        "revoke_approval",
        json!({"approval_id": id}),
    );
    assert_eq!(ok(&revoked)["revoked"]["id"], id);
    let after = ok(&call(&server, AGENT, "list_approvals", json!({}))).clone();
    assert_eq!(after["approvals"], json!([]));
    let again = call(
        &server,
        AGENT,
        "revoke_approval",
        json!({"approval_id": id}),
    );
    assert_eq!(err(&again)["code"], "INVALID_ARGUMENTS", "{again}");

    drop(server);
    runtime.block_on(model.shutdown());
}
