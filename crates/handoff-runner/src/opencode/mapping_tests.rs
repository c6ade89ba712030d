#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

const MAIN: &str = "ses_main";

fn event(kind: &str, properties: Value) -> Value {
    json!({ "id": "evt_1", "type": kind, "properties": properties })
}

fn tool(session: &str, id: &str, status: &str, extra: Value) -> Value {
    let mut state = json!({ "status": status, "input": { "filePath": "/w/a.txt" } });
    if let (Some(state), Some(extra)) = (state.as_object_mut(), extra.as_object()) {
        state.extend(extra.clone());
    }
    event(
        "message.part.updated",
        json!({ "sessionID": session, "part": {
            "id": id, "sessionID": session, "type": "tool", "tool": "write", "callID": "call_1",
            "state": state
        }}),
    )
}

#[test]
fn tool_states_are_recorded_once_each() {
    let mut reader = SessionEvents::new(MAIN);
    let running = tool(MAIN, "prt_1", "running", json!({}));
    assert_eq!(reader.read(&running).len(), 1);
    assert!(
        reader.read(&running).is_empty(),
        "a repeated state is not recorded twice"
    );
    let done = reader.read(&tool(
        MAIN,
        "prt_1",
        "completed",
        json!({ "title": "a.txt", "output": "ok" }),
    ));
    let [Signal::Event(e)] = done.as_slice() else {
        panic!("{done:?}")
    };
    assert_eq!(e.kind, EventKind::Tool);
    assert_eq!(e.message, "write completed: a.txt");
    assert_eq!(e.data["status"], "completed");
    assert_eq!(e.data["input"]["filePath"], "/w/a.txt");
    let failed = reader.read(&tool(
        MAIN,
        "prt_2",
        "error",
        json!({ "error": "disk full" }),
    ));
    let [Signal::Event(e)] = failed.as_slice() else {
        panic!("{failed:?}")
    };
    assert_eq!(e.message, "write failed: disk full");
}

#[test]
fn other_sessions_are_ignored_but_sub_agents_are_followed() {
    let mut reader = SessionEvents::new(MAIN);
    assert!(
        reader
            .read(&tool("ses_other", "p", "running", json!({})))
            .is_empty()
    );
    assert!(
        reader
            .read(&event("session.idle", json!({ "sessionID": "ses_other" })))
            .is_empty()
    );
    reader.read(&event(
        "session.created",
        json!({ "sessionID": "ses_child", "info": { "id": "ses_child", "parentID": MAIN } }),
    ));
    assert_eq!(
        reader
            .read(&tool("ses_child", "p", "running", json!({})))
            .len(),
        1
    );
    // A sub-agent going idle does not end the task.
    assert!(
        reader
            .read(&event("session.idle", json!({ "sessionID": "ses_child" })))
            .is_empty()
    );
    assert_eq!(
        reader.read(&event("session.idle", json!({ "sessionID": MAIN }))),
        vec![Signal::Idle]
    );
}

#[test]
fn final_text_becomes_the_answer_only_when_finished() {
    let mut reader = SessionEvents::new(MAIN);
    let text = |end: Value| {
        event(
            "message.part.updated",
            json!({ "sessionID": MAIN, "part": {
                "id": "prt_t", "type": "text", "text": "All done.", "time": { "start": 1, "end": end }
            }}),
        )
    };
    assert!(reader.read(&text(Value::Null)).is_empty());
    let signals = reader.read(&text(json!(2)));
    assert!(
        signals.contains(&Signal::Answer("All done.".to_owned())),
        "{signals:?}"
    );
}

#[test]
fn status_retry_and_errors_are_signals() {
    let mut reader = SessionEvents::new(MAIN);
    let retry = reader.read(&event(
        "session.status",
        json!({ "sessionID": MAIN, "status": { "type": "retry", "attempt": 3, "message": "overloaded", "next": 0 } }),
    ));
    assert_eq!(
        retry,
        vec![Signal::Retry {
            attempt: 3,
            message: "overloaded".to_owned()
        }]
    );
    let error = reader.read(&event(
        "session.error",
        json!({ "sessionID": MAIN, "error": { "name": "APIError", "data": { "message": "bad key" } } }),
    ));
    assert_eq!(error, vec![Signal::Error("APIError: bad key".to_owned())]);
    let aborted = reader.read(&event(
        "session.error",
        json!({ "sessionID": MAIN, "error": { "name": "MessageAbortedError", "data": {} } }),
    ));
    assert_eq!(aborted, vec![Signal::Aborted]);
}

#[test]
fn permission_and_question_requests_are_relayed() {
    let mut reader = SessionEvents::new(MAIN);
    let asked = reader.read(&event(
        "permission.asked",
        json!({ "id": "per_1", "sessionID": MAIN, "permission": "bash", "patterns": ["touch x"],
                "metadata": {}, "always": ["touch *"] }),
    ));
    let [Signal::Input(request)] = asked.as_slice() else {
        panic!("{asked:?}")
    };
    assert_eq!(request.kind, InputKind::Permission);
    assert_eq!(request.patterns, vec!["touch x".to_owned()]);
    assert_eq!(request.title, "allow bash on touch x?");
    let question = reader.read(&event(
        "question.asked",
        json!({ "id": "que_1", "sessionID": MAIN, "questions": [
            { "question": "Proceed?", "header": "Go", "options": [{ "label": "Yes" }] }
        ]}),
    ));
    let [Signal::Input(request)] = question.as_slice() else {
        panic!("{question:?}")
    };
    assert_eq!(
        (request.kind, request.title.as_str()),
        (InputKind::Question, "Proceed?")
    );
    assert_eq!(
        reader.read(&event(
            "permission.replied",
            json!({ "sessionID": MAIN, "requestID": "per_1", "reply": "once" })
        )),
        vec![Signal::InputSettled("per_1".to_owned())]
    );
}
