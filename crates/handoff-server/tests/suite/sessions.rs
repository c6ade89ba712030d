//! Legacy sessions: isolation between clients, each session bound to the caller that opened
//! it, DELETE, room made at the limits per caller and in total (no lockouts, a true
//! Retry-After), the early end of unused sessions, and the list methods of capabilities
//! Handoff does not declare.

use std::time::{Duration, Instant};

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::json;

use super::common::{
    Reply, TestServer, WAIT_LIMIT, call, error_code, error_message, initialize_body, start,
    wait_until,
};

#[tokio::test]
async fn interleaved_clients_with_the_same_ids_get_their_own_answers() {
    let server = start(&[]).await;
    let a = server.initialize(&[]).await;
    let b = server.initialize(&[]).await;
    assert_ne!(a, b);
    // Both clients number their requests 1..=20, so every id is in flight twice at once —
    // the older server delivered one client's result to the other.
    let calls = (1..=20u64)
        .flat_map(|id| [(&a, "A", id), (&b, "B", id)])
        .map(|(session, who, id)| {
            let server = &server;
            async move {
                let reply = server
                    .session_call(
                        session,
                        &[],
                        &call(id, "ping", json!({"message": format!("{who}-{id}")})),
                    )
                    .await;
                (who, id, reply)
            }
        });
    for (who, id, reply) in join_all(calls).await {
        assert_eq!(reply.body["id"], id);
        assert_eq!(
            reply.body["result"]["structuredContent"]["message"],
            format!("{who}-{id}"),
            "{:?}",
            reply.body
        );
    }
}

#[tokio::test]
async fn deleting_one_session_leaves_others_working() {
    let server = start(&[]).await;
    let a = server.initialize(&[]).await;
    let b = server.initialize(&[]).await;
    let deleted = server
        .client
        .delete(&server.url)
        .header("mcp-session-id", &a)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let gone = server
        .session_call(&a, &[], &call(1, "ping", json!({})))
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    error_code(&gone);
    let alive = server
        .session_call(&b, &[], &call(1, "ping", json!({})))
        .await;
    assert_eq!(alive.body["result"]["structuredContent"]["ok"], true);
}

#[tokio::test]
async fn get_stream_opens_for_a_session() {
    let server = start(&[]).await;
    let session = server.initialize(&[]).await;
    let response = server
        .client
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
}

#[tokio::test]
async fn deleting_a_session_answers_200_then_404_and_an_unknown_one_404() {
    let server = start(&[]).await;
    let session = server.initialize(&[]).await;
    let deleted = server.delete_session(&session).await;
    // The Python SDK (and so Letta) takes 200 or 204 as success; rmcp's 202 made it warn.
    assert_eq!(deleted.status, StatusCode::OK, "{:?}", deleted.body);
    for id in [session.as_str(), "no-such-session"] {
        let again = server.delete_session(id).await;
        assert_eq!(
            again.status,
            StatusCode::NOT_FOUND,
            "{id}: {:?}",
            again.body
        );
        assert_eq!(error_code(&again), -32001, "{id}");
        assert!(error_message(&again).contains("Session not found"), "{id}");
    }
}

#[tokio::test]
async fn list_methods_of_undeclared_capabilities_are_method_not_found() {
    let server = start(&[]).await;
    let session = server.initialize(&[]).await;
    for (id, method) in [
        (1, "prompts/list"),
        (2, "resources/list"),
        (3, "resources/templates/list"),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}});
        let legacy = server.session_call(&session, &[], &body).await;
        assert_eq!(error_code(&legacy), -32601, "{method}: {:?}", legacy.body);
        let modern = server.stateless(id, method, None, json!({})).await;
        assert_eq!(error_code(&modern), -32601, "{method}: {:?}", modern.body);
    }
}

async fn refused_initialize(server: &TestServer, who: &[(&str, &str)]) -> Reply {
    let reply = server.post(who, &initialize_body(json!({}))).await;
    assert!(
        reply.headers.get("mcp-session-id").is_none(),
        "a refused initialize opened a session"
    );
    error_code(&reply);
    reply
}

/// The server's gauge of open legacy sessions.
async fn open_sessions(server: &TestServer) -> u64 {
    let text = server.metrics().await;
    text.lines()
        .find_map(|line| line.strip_prefix("handoff_mcp_sessions_open "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no handoff_mcp_sessions_open in:\n{text}"))
}

/// Waits until the server holds `open` legacy sessions (reading the gauge touches none).
async fn wait_open_sessions(server: &TestServer, open: u64, what: &str) {
    wait_until(what, WAIT_LIMIT, async || {
        let now = open_sessions(server).await;
        if now == open { Ok(()) } else { Err(now) }
    })
    .await;
}

/// A ping in `session` as the caller `who`: the answer's HTTP status.
async fn ping_as(server: &TestServer, session: &str, who: &[(&str, &str)]) -> StatusCode {
    let reply = server
        .session_call(session, who, &call(1, "ping", json!({})))
        .await;
    if reply.status == StatusCode::OK {
        assert_eq!(
            reply.body["result"]["structuredContent"]["ok"], true,
            "{:?}",
            reply.body
        );
    } else {
        assert_eq!(error_code(&reply), -32001, "{:?}", reply.body);
    }
    reply.status
}

#[tokio::test]
async fn a_caller_at_its_limit_ends_its_own_least_recent_session_not_anothers() {
    let server = start(&[("HANDOFF_MAX_SESSIONS_PER_CLIENT", "2")]).await;
    let alice = [("x-agent-id", "alice")];
    let bob = [("x-agent-id", "bob")];
    let first = server.initialize(&alice).await;
    let second = server.initialize(&alice).await;
    let bobs = server.initialize(&bob).await;
    // Used after the second was opened: the second is alice's least recently active now.
    assert_eq!(ping_as(&server, &first, &alice).await, StatusCode::OK);
    let third = server.initialize(&alice).await;
    assert_eq!(
        ping_as(&server, &second, &alice).await,
        StatusCode::NOT_FOUND
    );
    for (session, who) in [(&first, &alice), (&third, &alice), (&bobs, &bob)] {
        assert_eq!(ping_as(&server, session, who).await, StatusCode::OK);
    }

    // 200 sessions abandoned by one caller lock out neither it nor anyone else.
    for _ in 0..200 {
        server.initialize(&alice).await;
    }
    server.initialize(&alice).await;
    server.initialize(&[("x-agent-id", "carol")]).await;
    assert_eq!(open_sessions(&server).await, 2 + 1 + 1);
    assert_eq!(ping_as(&server, &bobs, &bob).await, StatusCode::OK);
}

#[tokio::test]
async fn at_the_servers_limit_only_a_quiet_session_makes_way_when_retry_after_says() {
    let server = start(&[
        ("HANDOFF_MAX_SESSIONS", "2"),
        ("HANDOFF_UNUSED_SESSION_TIMEOUT_SECS", "3"),
    ])
    .await;
    let alice = [("x-agent-id", "alice")];
    let bob = [("x-agent-id", "bob")];
    let alices = server.initialize(&alice).await;
    let bobs = server.initialize(&bob).await;
    // Both used (an unused one would simply end), alice's first: hers is the quieter.
    assert_eq!(ping_as(&server, &alices, &alice).await, StatusCode::OK);
    assert_eq!(ping_as(&server, &bobs, &bob).await, StatusCode::OK);

    let carol = [("x-agent-id", "carol")];
    let refused = refused_initialize(&server, &carol).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(error_message(&refused).contains("server.max_sessions"));
    let retry: u64 = refused.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3).contains(&retry), "Retry-After: {retry}");
    // What the header promises is what is tested: a retry after it is admitted.
    tokio::time::sleep(Duration::from_secs(retry)).await;
    let carols = server.initialize(&carol).await;
    assert_eq!(
        ping_as(&server, &alices, &alice).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(ping_as(&server, &bobs, &bob).await, StatusCode::OK);
    assert_eq!(ping_as(&server, &carols, &carol).await, StatusCode::OK);
}

#[tokio::test]
async fn a_session_answers_only_the_caller_that_opened_it() {
    let tokens = json!([
        {"token": "token-of-agent-a-0123456789", "role": "agent", "agent_id": "agent-a"},
        {"token": "token-of-agent-b-0123456789", "role": "agent", "agent_id": "agent-b"},
    ])
    .to_string();
    let server = start(&[("HANDOFF_AUTH_TOKENS", &tokens)]).await;
    let a = [("authorization", "Bearer token-of-agent-a-0123456789")];
    let b = [("authorization", "Bearer token-of-agent-b-0123456789")];
    let session = server.initialize(&a).await;
    let unknown = ping_as(&server, "no-such-session", &b).await;

    // B with A's session: every request is the 404 of a session that does not exist —
    // a call, a response (an answer to one of A's prompts), the stream of A's prompts, the end.
    assert_eq!(ping_as(&server, &session, &b).await, unknown);
    let answer = server
        .session_call(
            &session,
            &b,
            &json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept"}}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{:?}", answer.body);
    let stream = server
        .client
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .header(b[0].0, b[0].1)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::NOT_FOUND);
    let ended = server.delete_session_as(&session, &b).await;
    assert_eq!(ended.status, StatusCode::NOT_FOUND, "{:?}", ended.body);

    // A's session is untouched, and only A ends it.
    assert_eq!(ping_as(&server, &session, &a).await, StatusCode::OK);
    assert_eq!(
        server.delete_session_as(&session, &a).await.status,
        StatusCode::OK
    );

    // On an open server the caller is the agent it names: the same holds between names.
    let open = start(&[]).await;
    let alices = open.initialize(&[("x-agent-id", "alice")]).await;
    assert_eq!(
        ping_as(&open, &alices, &[("x-agent-id", "bob")]).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        ping_as(&open, &alices, &[]).await,
        StatusCode::NOT_FOUND,
        "a caller naming no one is not alice either"
    );
    assert_eq!(
        ping_as(&open, &alices, &[("x-agent-id", "alice")]).await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn an_unused_session_ends_after_the_short_timeout_and_a_used_one_stays() {
    let server = start(&[("HANDOFF_UNUSED_SESSION_TIMEOUT_SECS", "1")]).await;
    let unused = server.initialize(&[]).await;
    let used = server.initialize(&[]).await;
    let listed = server
        .session_call(
            &used,
            &[],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert!(
        listed.body["result"]["tools"].is_array(),
        "{:?}",
        listed.body
    );
    wait_open_sessions(&server, 1, "the unused session to end").await;
    assert_eq!(ping_as(&server, &unused, &[]).await, StatusCode::NOT_FOUND);
    assert_eq!(ping_as(&server, &used, &[]).await, StatusCode::OK);
}

/// The content type of an answer.
fn content_type(reply: &Reply) -> &str {
    reply.headers["content-type"].to_str().unwrap()
}

#[tokio::test]
async fn plain_requests_are_answered_before_rmcp_exactly_as_rmcp_answers_them() {
    let server = start(&[]).await;
    let session = server.initialize(&[]).await;
    // A weighted Accept header is left to rmcp, which answers on an SSE stream.
    let by_rmcp = [("accept", "application/json;q=1, text/event-stream")];
    let cases = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": "two", "method": "ping"}),
        call(3, "ping", json!({"message": "same"})),
        call(4, "health", json!({})),
    ];
    for body in &cases {
        let direct = server.session_call(&session, &[], body).await;
        let rmcp = server.session_call(&session, &by_rmcp, body).await;
        assert_eq!(content_type(&direct), "application/json", "{body}");
        assert!(
            content_type(&rmcp).starts_with("text/event-stream"),
            "{body}"
        );
        let tool = body["params"]["name"].as_str().unwrap_or_default();
        if tool == "health" {
            // Its figures move between two calls; its shape does not.
            let keys = |r: &Reply| {
                let map = r.body["result"]["structuredContent"].as_object().cloned();
                map.unwrap().keys().cloned().collect::<Vec<_>>()
            };
            assert_eq!(keys(&direct), keys(&rmcp));
        } else {
            let timeless = |r: &Reply| {
                let mut body = r.body.clone();
                if let Some(out) = body["result"]["structuredContent"].as_object_mut() {
                    out.remove("server_time_ms");
                }
                body
            };
            assert_eq!(timeless(&direct), timeless(&rmcp), "{body}");
        }
    }
}

#[tokio::test]
async fn a_state_changing_call_is_left_to_rmcp() {
    let server = start(&[]).await;
    let alice = [("x-agent-id", "alice")];
    let session = server.initialize(&alice).await;
    let submitted = server
        .session_call(
            &session,
            &alice,
            &call(1, "execute_task", json!({"task_description": "x"})),
        )
        .await;
    assert!(content_type(&submitted).starts_with("text/event-stream"));
    // No executor runs in this server: the answer is a tool error, still rmcp's.
    assert!(
        submitted.body["result"]["content"].is_array(),
        "{:?}",
        submitted.body
    );
}

#[tokio::test]
async fn a_session_kept_busy_by_direct_answers_outlives_the_idle_timeout_then_idles_out() {
    let server = start(&[("HANDOFF_SESSION_IDLE_TIMEOUT_SECS", "2")]).await;
    let session = server.initialize(&[]).await;
    // Two and a half idle timeouts of pings every 100 ms, none of which reaches rmcp's worker
    // (a stall of almost two seconds between two of them still keeps the session).
    let busy_until = Instant::now() + Duration::from_secs(5);
    let mut id = 0;
    while Instant::now() < busy_until {
        id += 1;
        let reply = server
            .session_call(
                &session,
                &[],
                &json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "ping {id}: {:?}", reply.body);
        assert_eq!(content_type(&reply), "application/json");
        // The pace of a client keeping its session busy: the time passing is what is tested,
        // not a wait for an outcome.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        open_sessions(&server).await,
        1,
        "the busy session is still open"
    );
    // Silent now: it ends by itself. Reading the gauge does not touch it.
    wait_open_sessions(&server, 0, "the idle session to end").await;
    let gone = server
        .session_call(
            &session,
            &[],
            &json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}),
        )
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{:?}", gone.body);
}
