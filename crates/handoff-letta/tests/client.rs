//! The client against a REAL Letta 0.16.8 server (`scripts/letta/up.sh`): every route Handoff
//! uses, the typed errors Letta's answers become, and what the server really enforces.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use handoff_config::LettaConfig;
use handoff_letta::{LettaClient, LettaError, NewBlock, NewMessage, testing};
use serde_json::json;

fn client(url: &str) -> LettaClient {
    LettaClient::new(&LettaConfig {
        api_url: Some(url.to_owned()),
        request_timeout: Duration::from_secs(120),
        ..LettaConfig::off()
    })
    .unwrap()
}

/// Looks at `probe` with a back-off until it yields `Ok`; after three minutes (a safety net: a
/// real server's run may take a while) fails with `what` and the last observation.
async fn wait_until<T, O: std::fmt::Debug>(
    what: &str,
    mut probe: impl AsyncFnMut() -> Result<T, O>,
) -> T {
    let give_up = std::time::Instant::now() + Duration::from_secs(180);
    let mut pause = Duration::from_millis(50);
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                std::time::Instant::now() < give_up,
                "waited for {what}; last seen: {seen:?}"
            ),
        }
        // The pause between two looks at the server, which announces nothing.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

fn block(label: &str, value: &str) -> NewBlock {
    NewBlock {
        label: label.to_owned(),
        description: "test block".into(),
        value: value.to_owned(),
        limit: 1_000,
        metadata: json!({"handoff_task_id": label}),
        tags: vec!["handoff-test".into()],
    }
}

#[tokio::test]
async fn blocks_live_through_every_route_handoff_uses() {
    let url = testing::letta_url();
    let c = client(&url);
    let health = c.health().await.unwrap();
    assert_eq!(health.status, "ok");
    let agent = testing::create_agent(&url, "client-blocks").await;

    let label = format!("handoff_test_{}", std::process::id());
    let made = c.create_block(&block(&label, "{\"v\":1}")).await.unwrap();
    assert_eq!(made.label.as_deref(), Some(label.as_str()));
    assert_eq!(made.limit, Some(1_000));
    let found = c.blocks_labelled(&label).await.unwrap();
    assert!(found.iter().any(|b| b.id == made.id));

    // Attaching twice is harmless.
    c.attach_block(&agent, &made.id).await.unwrap();
    c.attach_block(&agent, &made.id).await.unwrap();
    let held = c.agent_blocks(&agent).await.unwrap();
    assert!(held.iter().any(|b| b.id == made.id));

    // A second block with a label the agent already holds is a conflict.
    let twin = c.create_block(&block(&label, "{}")).await.unwrap();
    let clash = c.attach_block(&agent, &twin.id).await;
    assert!(
        matches!(clash, Err(LettaError::Conflict { .. })),
        "{clash:?}"
    );
    c.delete_block(&twin.id).await.unwrap();

    c.update_block(&made.id, "{\"v\":2}").await.unwrap();
    assert_eq!(c.block(&made.id).await.unwrap().value, "{\"v\":2}");

    // Detached blocks are still readable by id; a second detach is a 404.
    c.detach_block(&agent, &made.id).await.unwrap();
    assert!(
        !c.agent_blocks(&agent)
            .await
            .unwrap()
            .iter()
            .any(|b| b.id == made.id)
    );
    assert_eq!(c.block(&made.id).await.unwrap().value, "{\"v\":2}");
    let again = c.detach_block(&agent, &made.id).await;
    assert!(
        matches!(again, Err(LettaError::NotFound { .. })),
        "{again:?}"
    );

    c.delete_block(&made.id).await.unwrap();
    let gone = c.block(&made.id).await;
    assert!(matches!(gone, Err(LettaError::NotFound { .. })), "{gone:?}");
    assert!(gone.unwrap_err().is_permanent());
}

#[tokio::test]
async fn the_server_does_not_enforce_a_block_limit_so_handoff_must() {
    let url = testing::letta_url();
    let c = client(&url);
    let label = format!("handoff_oversize_{}", std::process::id());
    let long = "x".repeat(5_000);
    // Measured fact: a value five times the limit is stored as is.
    let made = c.create_block(&block(&label, &long)).await.unwrap();
    assert_eq!(c.block(&made.id).await.unwrap().value.len(), 5_000);
    c.delete_block(&made.id).await.unwrap();
}

#[tokio::test]
async fn a_message_is_found_again_by_its_otid() {
    let url = testing::letta_url();
    let c = client(&url);
    let agent = testing::create_agent(&url, "client-messages").await;
    let otid = format!("handoff-done-test-{}", std::process::id());
    let run = c
        .send_message_async(
            &agent,
            &NewMessage {
                role: "system".into(),
                content: "[Handoff] Task task_test completed.".into(),
                otid: otid.clone(),
            },
        )
        .await
        .unwrap();
    assert!(run.id.starts_with("run-"), "{run:?}");
    wait_until("the message with our otid to appear", async || {
        let messages = c.recent_messages(&agent, 50).await.unwrap();
        if messages.iter().any(|m| m["otid"] == otid.as_str()) {
            Ok(())
        } else {
            Err(messages.len())
        }
    })
    .await;
    let done = c.run(&run.id).await.unwrap();
    assert!(done.status.is_some());
}

#[tokio::test]
async fn an_async_message_is_stored_only_when_its_run_ends() {
    // The fact the notification's duplicate check rests on: while the run is active the message
    // is not in the agent's history, and the run is listed as active, made after it was sent.
    let url = testing::letta_url();
    let c = client(&url);
    let agent = testing::create_agent(&url, "client-runs").await;
    let otid = format!("handoff-slow-test-{}", std::process::id());
    let sent_at = handoff_task::unix_millis_now();
    let run = c
        .send_message_async(
            &agent,
            &NewMessage {
                role: "user".into(),
                // The scripted model holds its reply to this for 8 s (model-script.json).
                content: "HANDOFF-SLOW-REPLY from the client test".into(),
                otid: otid.clone(),
            },
        )
        .await
        .unwrap();
    let active = c.active_runs(&agent).await.unwrap();
    let listed = active
        .iter()
        .find(|r| r.id == run.id)
        .expect("the run is active");
    let made = listed.created_at_millis().expect("a run time that parses");
    assert!((made - sent_at).abs() < 60_000, "{listed:?}");
    let stored =
        |messages: Vec<serde_json::Value>| messages.iter().any(|m| m["otid"] == otid.as_str());
    assert!(!stored(c.recent_messages(&agent, 50).await.unwrap()));

    wait_until("the slow run to end", async || {
        let active = c.active_runs(&agent).await.unwrap();
        if active.is_empty() {
            Ok(())
        } else {
            Err(active)
        }
    })
    .await;
    assert!(c.active_runs(&agent).await.unwrap().is_empty());
    assert!(stored(c.recent_messages(&agent, 50).await.unwrap()));
}

#[tokio::test]
async fn unknown_agents_and_unreachable_servers_are_typed_errors() {
    let url = testing::letta_url();
    let c = client(&url);
    let missing = c
        .attach_block(
            "agent-00000000-0000-4000-8000-000000000000",
            "block-00000000-0000-4000-8000-000000000000",
        )
        .await;
    assert!(
        matches!(missing, Err(LettaError::NotFound { .. })),
        "{missing:?}"
    );

    // Nothing listens on port 9 here: every attempt fails to connect, then the client gives up.
    let dead = LettaClient::new(&LettaConfig {
        api_url: Some("http://127.0.0.1:9".into()),
        max_retries: 2,
        request_timeout: Duration::from_secs(2),
        ..LettaConfig::off()
    })
    .unwrap();
    match dead.health().await {
        Err(LettaError::Exhausted { attempts: 3, .. }) => {}
        other => panic!("{other:?}"),
    }
}
