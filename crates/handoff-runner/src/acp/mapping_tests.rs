//! Lines `opencode acp` 1.18.33 really wrote, read back.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

fn read(reader: &mut Reader, line: Value) -> Vec<Signal> {
    reader.read(&line)
}

fn update(update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": "ses_1", "update": update}})
}

fn events(signals: Vec<Signal>) -> Vec<NewEvent> {
    signals
        .into_iter()
        .filter_map(|s| match s {
            Signal::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

#[test]
fn a_tool_call_reports_each_new_status_under_its_first_title() {
    let mut reader = Reader::default();
    let started = events(read(
        &mut reader,
        update(json!({"sessionUpdate": "tool_call",
        "toolCallId": "call_2_0", "title": "write", "kind": "edit", "status": "pending",
        "locations": [], "rawInput": {}})),
    ));
    assert_eq!(started[0].data["tool"], "write");
    assert_eq!(started[0].data["status"], "pending");
    let running = json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_2_0",
        "status": "in_progress", "kind": "edit", "title": "write",
        "locations": [{"path": "/w/hello.txt"}],
        "rawInput": {"content": "hi\n", "filePath": "/w/hello.txt"}});
    let running = events(read(&mut reader, update(running.clone())))
        .into_iter()
        .chain(events(read(&mut reader, update(running))))
        .collect::<Vec<_>>();
    assert_eq!(
        running.len(),
        1,
        "a repeated status is not news: {running:?}"
    );
    assert_eq!(running[0].data["locations"][0], "/w/hello.txt");
    let done = events(read(
        &mut reader,
        update(json!({"sessionUpdate": "tool_call_update",
        "toolCallId": "call_2_0", "status": "completed", "title": "w/hello.txt",
        "content": [{"type": "content", "content": {"type": "text", "text": "Wrote file successfully."}}]})),
    ));
    assert_eq!(done[0].kind, EventKind::Tool);
    assert_eq!(done[0].data["tool"], "write");
    assert_eq!(done[0].data["status"], "completed");
    assert_eq!(done[0].data["output"], "Wrote file successfully.");
}

#[test]
fn message_chunks_become_one_text_event_and_the_answer() {
    let mut reader = Reader::default();
    for chunk in ["Create", "d hell", "o.txt."] {
        let said = read(
            &mut reader,
            update(json!({"sessionUpdate": "agent_message_chunk",
            "messageId": "m1", "content": {"type": "text", "text": chunk}})),
        );
        assert!(said.is_empty());
    }
    let end = read(
        &mut reader,
        json!({"jsonrpc": "2.0", "id": "handoff-prompt:1",
        "result": {"stopReason": "end_turn"}}),
    );
    assert_eq!(events(end.clone())[0].message, "Created hello.txt.");
    assert_eq!(reader.answer.as_deref(), Some("Created hello.txt."));
    assert!(matches!(end.last(), Some(Signal::Response(id, Ok(_))) if id == "handoff-prompt:1"));
}

#[test]
fn chunks_of_another_message_end_the_one_before() {
    let mut reader = Reader::default();
    let chunk = |id: Option<&str>, text: &str| {
        let mut update = json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text}});
        if let Some(id) = id {
            update["messageId"] = json!(id);
        }
        update
    };
    assert!(read(&mut reader, update(chunk(None, "Warning: no metadata\n"))).is_empty());
    let said = events(read(&mut reader, update(chunk(Some("m1"), "Done"))));
    assert_eq!(said[0].message, "Warning: no metadata\n");
    assert!(read(&mut reader, update(chunk(Some("m1"), "."))).is_empty());
    let said = events(reader.flush());
    assert_eq!(said[0].message, "Done.");
    assert_eq!(reader.answer.as_deref(), Some("Done."));
}

#[test]
fn a_permission_request_is_named_like_handoffs_rules() {
    let mut reader = Reader::default();
    let said = read(
        &mut reader,
        json!({"jsonrpc": "2.0", "id": 0,
        "method": "session/request_permission", "params": {"sessionId": "ses_1",
        "toolCall": {"toolCallId": "call_2_0", "title": "touch /w/approved.txt",
            "kind": "execute", "status": "pending", "locations": [],
            "rawInput": {"command": "touch /w/approved.txt"}},
        "options": [{"optionId": "once", "kind": "allow_once", "name": "Allow once"}]}}),
    );
    let Some(Signal::Input(request)) = said.last() else {
        panic!("{said:?}");
    };
    assert_eq!(request.id, "0");
    assert_eq!(request.permission, "bash");
    assert_eq!(request.patterns, ["touch /w/approved.txt"]);
    assert_eq!(request.detail["rpc_id"], 0);
    assert_eq!(request.detail["options"][0]["optionId"], "once");
}

#[test]
fn plans_become_todos_and_unknown_requests_are_refused() {
    let mut reader = Reader::default();
    let plan = events(read(
        &mut reader,
        update(json!({"sessionUpdate": "plan", "entries": [
        {"content": "a", "priority": "high", "status": "completed"},
        {"content": "b", "priority": "low", "status": "pending"}]})),
    ));
    assert_eq!(plan[0].message, "todo list: 1/2 done");
    assert_eq!(plan[0].data["todos"][1]["content"], "b");
    let said = read(
        &mut reader,
        json!({"jsonrpc": "2.0", "id": 5,
        "method": "fs/read_text_file", "params": {"path": "/etc/passwd"}}),
    );
    assert_eq!(said, vec![Signal::Unsupported(json!(5))]);
    // OpenCode's copy of an allowed edit for an editor's buffer: acknowledged, never written
    // (the path is the agent's to name; Handoff writes nothing for it).
    let outside = std::env::temp_dir().join("handoff-acp-never-written.txt");
    let said = read(
        &mut reader,
        json!({"jsonrpc": "2.0", "id": 6, "method": "fs/write_text_file",
        "params": {"sessionId": "s", "path": outside, "content": "x"}}),
    );
    assert_eq!(said, vec![Signal::Acknowledged(json!(6))]);
    assert!(!outside.exists());
    // Replayed history of a loaded session is not reported again.
    reader.replaying = true;
    let replay = read(
        &mut reader,
        update(json!({"sessionUpdate": "plan", "entries": []})),
    );
    assert!(replay.is_empty());
}

#[test]
fn a_diff_is_kept_with_its_path_and_usage_carries_the_sessions_running_cost() {
    let mut reader = Reader::default();
    read(
        &mut reader,
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "edit",
            "kind": "edit", "status": "pending"}),
        ),
    );
    let done = events(read(
        &mut reader,
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
            "status": "completed", "content": [{"type": "diff", "path": "/w/a.rs",
            "oldText": "fn a() {}", "newText": "fn a() -> u8 { 1 }"}]}),
        ),
    ));
    assert_eq!(
        done[0].data["diffs"],
        json!([{"path": "/w/a.rs", "new_text": "fn a() -> u8 { 1 }"}])
    );
    let usage = events(read(
        &mut reader,
        update(
            json!({"sessionUpdate": "usage_update", "used": 5300, "size": 200000,
            "cost": {"amount": 0.042, "currency": "USD"}}),
        ),
    ));
    assert_eq!(usage[0].data["used"], 5300);
    assert_eq!(
        usage[0].data["session_cost"],
        json!({"amount": 0.042, "currency": "USD"})
    );
    // A running total is not a step's cost: nothing may add it up per event.
    assert!(usage[0].data.get("cost").is_none(), "{}", usage[0].data);
}
