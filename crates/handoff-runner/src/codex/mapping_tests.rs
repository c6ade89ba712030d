#![allow(clippy::unwrap_used)]

//! Shapes below are what `codex app-server` 0.169.0 sent in hand-run sessions.

use serde_json::json;

use super::*;

fn notify(method: &str, params: Value) -> Value {
    json!({ "method": method, "params": params })
}

fn events(signals: &[Signal]) -> Vec<&NewEvent> {
    signals
        .iter()
        .filter_map(|s| match s {
            Signal::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

fn command_item(status: &str, exit: Value) -> Value {
    json!({ "item": {
        "type": "commandExecution", "id": "call_4_0", "status": status, "exitCode": exit,
        "command": "/bin/bash -lc 'touch /w/approved.txt'", "cwd": "/w",
        "commandActions": [{"type": "unknown", "command": "touch /w/approved.txt"}],
        "aggregatedOutput": "", "durationMs": 3,
    }})
}

#[test]
fn a_command_reads_as_a_shell_tool_with_the_unwrapped_command_and_exit_code() {
    let mut reader = Reader::default();
    let started = reader.read(&notify(
        "item/started",
        command_item("inProgress", Value::Null),
    ));
    let [Signal::Event(e)] = started.as_slice() else {
        panic!("{started:?}")
    };
    assert_eq!(
        (e.kind, e.message.as_str()),
        (EventKind::Tool, "shell running")
    );
    assert_eq!(e.data["tool"], "shell");
    assert_eq!(e.data["input"]["command"], "touch /w/approved.txt");

    let done = reader.read(&notify(
        "item/completed",
        command_item("completed", json!(0)),
    ));
    assert_eq!(events(&done)[0].message, "shell completed");
    assert_eq!(events(&done)[0].data["exit_code"], 0);
    let failed = reader.read(&notify("item/completed", command_item("failed", json!(2))));
    assert_eq!(events(&failed)[0].message, "shell failed (exit 2)");
    assert_eq!(events(&failed)[0].data["status"], "error");
    let declined = reader.read(&notify(
        "item/completed",
        command_item("declined", Value::Null),
    ));
    assert_eq!(events(&declined)[0].data["status"], "declined");
}

#[test]
fn a_command_approval_is_a_bash_permission_on_what_the_agent_asked_to_run() {
    let mut reader = Reader::default();
    let asked = reader.read(&json!({
        "method": "item/commandExecution/requestApproval", "id": 0,
        "params": {
            "kind": "command", "threadId": "t", "turnId": "u", "itemId": "call_4_0",
            "command": "/bin/bash -lc 'touch /w/approved.txt'", "cwd": "/w",
            "availableDecisions": ["accept", "cancel"],
        }
    }));
    let [Signal::Input(request)] = asked.as_slice() else {
        panic!("{asked:?}")
    };
    assert_eq!(request.id, "0");
    assert_eq!(request.kind, InputKind::Permission);
    assert_eq!(request.permission, "bash");
    assert_eq!(request.patterns, vec!["touch /w/approved.txt".to_owned()]);
    assert_eq!(request.detail["rpc_id"], 0);
    assert_eq!(
        request.detail["method"],
        "item/commandExecution/requestApproval"
    );
}

#[test]
fn a_patch_approval_names_the_files_its_item_announced() {
    let mut reader = Reader::default();
    let change = json!({ "item": {
        "type": "fileChange", "id": "call_4_0", "status": "inProgress",
        "changes": [{"path": "/w/hello.txt", "kind": {"type": "add"}, "diff": "hello\n"}],
    }});
    let started = reader.read(&notify("item/started", change.clone()));
    assert_eq!(events(&started)[0].data["tool"], "apply_patch");
    let asked = reader.read(&json!({
        "method": "item/fileChange/requestApproval", "id": 1,
        "params": {"threadId": "t", "turnId": "u", "itemId": "call_4_0", "reason": null}
    }));
    let [Signal::Input(request)] = asked.as_slice() else {
        panic!("{asked:?}")
    };
    assert_eq!(request.permission, "edit");
    assert_eq!(request.patterns, vec!["/w/hello.txt".to_owned()]);

    let mut done = change;
    done["item"]["status"] = json!("completed");
    let completed = reader.read(&notify("item/completed", done));
    let completed = events(&completed);
    assert_eq!(completed[0].data["status"], "completed");
    assert_eq!(completed[1].kind, EventKind::Diff);
    assert_eq!(completed[1].data["files"][0]["file"], "/w/hello.txt");
    assert_eq!(
        reader.read(&json!({"method": "serverRequest/resolved",
        "params": {"threadId": "t", "requestId": 1}})),
        vec![Signal::Settled("1".to_owned())]
    );
}

#[test]
fn agent_messages_answer_and_turns_end_with_the_providers_words() {
    let mut reader = Reader::default();
    let said = reader.read(&notify(
        "item/completed",
        json!({"item": {
            "type": "agentMessage", "id": "msg_1", "text": "Created hello.txt."
        }}),
    ));
    assert!(said.contains(&Signal::Answer("Created hello.txt.".to_owned())));

    reader.read(&notify(
        "turn/diff/updated",
        json!({"threadId": "t", "turnId": "u",
        "diff": "diff --git a/hello.txt b/hello.txt\n+hello\n"}),
    ));
    let error = json!({
        "message": "{\"error\":{\"code\":null,\"message\":\"mock-model rejects this request\",\"param\":null,\"type\":\"invalid_request_error\"}}",
        "codexErrorInfo": "other", "additionalDetails": null,
    });
    let end = reader.read(&notify(
        "turn/completed",
        json!({"threadId": "t", "turn": {
            "id": "u", "items": [], "status": "failed", "error": error,
        }}),
    ));
    assert_eq!(
        end.last(),
        Some(&Signal::TurnEnd(TurnEnd {
            id: "u".to_owned(),
            status: "failed".to_owned(),
            error: Some("mock-model rejects this request (invalid_request_error)".to_owned()),
        }))
    );
    assert_eq!(events(&end)[0].kind, EventKind::Diff);
    assert_eq!(reader.diffs.len(), 1);
}

#[test]
fn retries_are_errors_to_record_and_the_last_fatal_one_explains_a_failed_turn() {
    let mut reader = Reader::default();
    let retry = reader.read(&notify("error", json!({"willRetry": true, "threadId": "t", "turnId": "u",
        "error": {"message": "Reconnecting... 1/2", "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": null}},
                  "additionalDetails": "We're currently experiencing high demand, which may cause temporary errors."}})));
    let retry = events(&retry);
    assert_eq!(retry[0].kind, EventKind::Error);
    assert!(
        retry[0]
            .message
            .starts_with("model provider failed; Codex retries: Reconnecting... 1/2"),
        "{}",
        retry[0].message
    );
    reader.read(&notify("error", json!({"willRetry": false, "threadId": "t", "turnId": "u",
        "error": {"message": "We're currently experiencing high demand, which may cause temporary errors.",
                  "codexErrorInfo": "internalServerError"}})));
    let end = reader.read(&notify(
        "turn/completed",
        json!({"threadId": "t", "turn": {"id": "u", "items": [], "status": "failed", "error": null}}),
    ));
    let Some(Signal::TurnEnd(end)) = end.last() else {
        panic!("{end:?}")
    };
    assert_eq!(
        end.error.as_deref(),
        Some(
            "We're currently experiencing high demand, which may cause temporary errors. [internalServerError]"
        )
    );
}

#[test]
fn answers_user_messages_and_other_requests_are_told_apart() {
    let mut reader = Reader::default();
    assert_eq!(
        reader.read(&json!({"id": "handoff-thread", "result": {"thread": {"id": "t"}}})),
        vec![Signal::Response(
            "handoff-thread".to_owned(),
            Ok(json!({"thread": {"id": "t"}}))
        )]
    );
    assert_eq!(
        reader.read(
            &json!({"id": "handoff-thread", "error": {"code": -32600, "message": "bad config\n"}})
        ),
        vec![Signal::Response(
            "handoff-thread".to_owned(),
            Err("bad config".to_owned())
        )]
    );
    assert_eq!(
        reader.read(&notify("item/started", json!({"item": {"type": "userMessage", "id": "m", "clientId": "handoff-1", "content": []}}))),
        vec![Signal::UserMessage(Some("handoff-1".to_owned()))]
    );
    assert_eq!(
        reader.read(&json!({"method": "account/chatgptAuthTokens/refresh", "id": 7, "params": {}})),
        vec![Signal::Unsupported(json!(7))]
    );
    let asked = reader.read(&json!({"method": "item/tool/requestUserInput", "id": 8, "params": {
        "itemId": "i", "threadId": "t", "turnId": "u", "isBlocking": true,
        "questions": [{"id": "q1", "header": "Name", "question": "Which name?", "options": null}]}}));
    let [Signal::Input(question)] = asked.as_slice() else {
        panic!("{asked:?}")
    };
    assert_eq!(
        (question.kind, question.title.as_str()),
        (InputKind::Question, "Which name?")
    );
}

#[test]
fn shell_wrappers_are_unwrapped_and_anything_else_is_kept() {
    assert_eq!(
        unwrap_shell("/bin/bash -lc 'touch /w/a.txt'"),
        "touch /w/a.txt"
    );
    assert_eq!(
        unwrap_shell("/bin/bash -lc \"python3 -c 'import sys; sys.exit(8)'\""),
        "python3 -c 'import sys; sys.exit(8)'"
    );
    assert_eq!(
        unwrap_shell("/bin/bash -lc \"printf 'n\\\\n' > notes.txt\""),
        "printf 'n\\n' > notes.txt"
    );
    assert_eq!(unwrap_shell("ls -la"), "ls -la");
    assert_eq!(
        unwrap_shell("bash -lc 'unterminated"),
        "bash -lc 'unterminated"
    );
}
