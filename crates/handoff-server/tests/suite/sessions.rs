//! Legacy sessions: isolation between clients, DELETE.

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::json;

use super::common::{call, error_code, start};

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
