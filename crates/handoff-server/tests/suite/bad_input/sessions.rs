//! The shared legacy session, used by callers that did not open it: another agent named by
//! the gateway, the gateway naming no agent, the operator. Every request on it — calls, a task
//! submission, answers to its prompts, a notification, its stream, its end — must be the 404
//! (`-32001`) of a session that does not exist, create no task, and leave the session working
//! for the caller that opened it (the run checks that last).

use super::{
    case::{Case, Expect, Send},
    fixture::{Fixture, GATEWAY, LEGACY, OPERATOR},
    raw::post_bytes,
};

/// The code of an unknown session.
const NOT_FOUND: &[i64] = &[-32001];

/// Every foreign-session case.
pub fn cases(fx: &Fixture) -> Vec<Case> {
    let strangers: [(&str, Vec<(String, String)>); 3] = [
        ("other-agent", identity(GATEWAY, Some("bad-input-stranger"))),
        ("no-agent", identity(GATEWAY, None)),
        ("operator", identity(OPERATOR, None)),
    ];
    let bodies = [
        ("ping", r#"{"jsonrpc":"2.0","id":7001,"method":"ping"}"#),
        (
            "tools-list",
            r#"{"jsonrpc":"2.0","id":7002,"method":"tools/list"}"#,
        ),
        (
            "list-tasks",
            r#"{"jsonrpc":"2.0","id":7003,"method":"tools/call","params":{"name":"list_tasks","arguments":{}}}"#,
        ),
        (
            "execute-task",
            r#"{"jsonrpc":"2.0","id":7004,"method":"tools/call","params":{"name":"execute_task","arguments":{"task_description":"submitted on a session that is not mine"}}}"#,
        ),
        (
            "answer-a-prompt",
            r#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"decision":"allow"}}}"#,
        ),
        (
            "notification",
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        ),
    ];
    let mut out = Vec::new();
    for (who, headers) in &strangers {
        let mut on_session = headers.clone();
        on_session.push(("mcp-session-id".into(), fx.session.clone()));
        on_session.push(("mcp-protocol-version".into(), LEGACY.into()));
        for (what, body) in bodies {
            let send = Send::Post {
                headers: with_content(&on_session),
                body: body.as_bytes().to_vec(),
            };
            out.push(case(who, what, send));
        }
        // The stream of the session's prompts, and its end: no client library sends these
        // with a body-less method and our headers, so by hand.
        for method in ["GET", "DELETE"] {
            let mut bytes = post_bytes(fx.addr, &on_session, b"");
            let request =
                String::from_utf8_lossy(&bytes).replacen("POST ", &format!("{method} "), 1);
            bytes = request.into_bytes();
            if method == "GET" {
                let head = String::from_utf8_lossy(&bytes).replacen(
                    "\r\n",
                    "\r\naccept: text/event-stream\r\n",
                    1,
                );
                bytes = head.into_bytes();
            }
            out.push(case(who, &method.to_lowercase(), Send::Raw(bytes)));
        }
    }
    out
}

fn case(who: &str, what: &str, send: Send) -> Case {
    Case {
        group: format!("legacy/foreign-session/{who}"),
        name: format!("legacy/foreign-session/{who}/{what}"),
        send,
        expect: Expect::codes(NOT_FOUND),
    }
}

/// The authorization (and agent) headers of a caller.
fn identity(token: &str, agent: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![("authorization".into(), format!("Bearer {token}"))];
    if let Some(agent) = agent {
        headers.push(("x-agent-id".into(), agent.into()));
    }
    headers
}

/// `headers` with the content and accept headers a POST carries.
fn with_content(headers: &[(String, String)]) -> Vec<(String, String)> {
    let mut all = vec![
        ("content-type".into(), "application/json".into()),
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
    ];
    all.extend(headers.iter().cloned());
    all
}
