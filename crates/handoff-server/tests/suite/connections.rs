//! Connection limits: header, body and keep-alive deadlines, and the connection cap.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::{
    common::{WAIT_LIMIT, call, start, wait_until},
    raw::{addr, connect, exchange, read_response, read_until_closed, status_of},
};

/// A deadline the server must wait for before closing (timer slack allowed).
const ONE_SECOND_AT_LEAST: Duration = Duration::from_millis(900);

/// Short deadlines under test; the one not under test is long so it cannot be the cause.
fn limits(
    header: &'static str,
    body: &'static str,
    idle: &'static str,
) -> Vec<(&'static str, &'static str)> {
    vec![
        ("HANDOFF_HEADER_READ_TIMEOUT_SECS", header),
        ("HANDOFF_BODY_READ_TIMEOUT_SECS", body),
        ("HANDOFF_KEEP_ALIVE_TIMEOUT_SECS", idle),
    ]
}

async fn closed_after_partial(env: &[(&str, &str)], partial: String) -> (Vec<u8>, Duration) {
    let server = start(env).await;
    let started = Instant::now();
    let mut stream = connect(&server.url).await;
    stream.write_all(partial.as_bytes()).await.unwrap();
    let (seen, closed) = read_until_closed(&mut stream).await;
    (seen, closed - started)
}

#[tokio::test]
async fn a_partial_request_line_is_closed_at_the_header_deadline() {
    let (_, after) = closed_after_partial(&limits("1", "60", "60"), "GET /hea".to_owned()).await;
    assert!(after >= ONE_SECOND_AT_LEAST, "closed after {after:?}");
}

#[tokio::test]
async fn partial_headers_are_closed_at_the_header_deadline() {
    let server_env = limits("1", "60", "60");
    let (_, after) = closed_after_partial(
        &server_env,
        "GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ".to_owned(),
    )
    .await;
    assert!(after >= ONE_SECOND_AT_LEAST, "closed after {after:?}");
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_at_the_header_deadline() {
    let (seen, after) = closed_after_partial(&limits("1", "60", "60"), String::new()).await;
    assert!(seen.is_empty());
    assert!(after >= ONE_SECOND_AT_LEAST, "closed after {after:?}");
}

#[tokio::test]
async fn a_partial_body_is_answered_408_and_closed_at_the_body_deadline() {
    let server = start(&limits("60", "1", "60")).await;
    let started = Instant::now();
    let mut stream = connect(&server.url).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{{\"jsonrpc\":",
        addr(&server.url)
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (seen, closed) = read_until_closed(&mut stream).await;
    assert!(
        closed - started >= ONE_SECOND_AT_LEAST,
        "closed after {:?}",
        closed - started
    );
    assert_eq!(status_of(&seen), 408, "{}", String::from_utf8_lossy(&seen));
    let text = String::from_utf8_lossy(&seen);
    let body: Value = serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["error"]["code"], -32600);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("body"),
        "{body}"
    );
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_at_the_keep_alive_deadline() {
    let server = start(&limits("60", "60", "1")).await;
    let mut stream = connect(&server.url).await;
    let request = format!(
        "GET /health HTTP/1.1\r\nhost: {}\r\n\r\n",
        addr(&server.url)
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let (status, _) = read_response(&mut stream).await;
    assert_eq!(status, 200);
    let answered = Instant::now();
    // Served again within the deadline: keep-alive works.
    stream.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut stream).await.0, 200);
    let (rest, closed) = read_until_closed(&mut stream).await;
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    assert!(
        closed - answered >= ONE_SECOND_AT_LEAST,
        "closed after {:?}",
        closed - answered
    );
}

#[tokio::test]
async fn a_request_in_flight_outlives_every_deadline() {
    let mut env = limits("1", "1", "1");
    env.extend([
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ]);
    let server = start(&env).await;
    let agent = [("x-agent-id", "agent-slow")];
    let session = server.initialize(&agent).await;
    // A sync call that answers after all three deadlines have passed.
    let reply = server
        .session_call(
            &session,
            &agent,
            &call(
                1,
                "execute_task",
                json!({"task_description": "sleep 3; echo done", "sync": true}),
            ),
        )
        .await;
    let result = &reply.body["result"]["structuredContent"];
    assert_eq!(result["status"], "completed", "{:?}", reply.body);
}

#[tokio::test]
async fn beyond_max_connections_a_new_client_gets_a_503_until_one_closes() {
    let mut env = limits("60", "60", "60");
    env.push(("HANDOFF_MAX_CONNECTIONS", "2"));
    let server = start(&env).await;
    let health = format!(
        "GET /health HTTP/1.1\r\nhost: {}\r\n\r\n",
        addr(&server.url)
    );
    // Two kept-alive connections, each served once: both hold a place.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = connect(&server.url).await;
        stream.write_all(health.as_bytes()).await.unwrap();
        assert_eq!(read_response(&mut stream).await.0, 200);
        held.push(stream);
    }
    let closing = format!(
        "GET /health HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
        addr(&server.url)
    );
    let (status, body) = exchange(&server.url, &closing).await;
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["code"], -32000);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("connection limit"),
        "{body}"
    );
    // The held connections are still served.
    held[0].write_all(health.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut held[0]).await.0, 200);

    drop(held);
    // The server notices the closes on its own time: poll until a new client is served.
    let what = "a new client served after the held connections closed";
    wait_until(what, WAIT_LIMIT, async || {
        let (status, body) = exchange(&server.url, &closing).await;
        match status {
            200 => Ok(()),
            503 => Err(body),
            other => panic!("{other}: {body}"),
        }
    })
    .await;
}
