//! Stored input requests waiting for an answer.

use handoff_task::{PendingInput, TaskStatus};
use serde_json::json;

use super::{
    ConformanceStore,
    support::{WIDE, change, claim_all, insert, new_task},
};

/// Input requests are listed oldest first and go when the run that asked is re-queued or ends.
pub async fn input_requests_are_kept_in_order_and_go_with_the_run<S: ConformanceStore>(store: S) {
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let claimed = claim_all(&store, WIDE).await;
    assert_eq!(claimed, vec![task.id.clone()]);
    let ask = |id: &str, at: i64| PendingInput {
        task_id: task.id.clone(),
        request_id: id.to_owned(),
        request: json!({ "id": id, "title": format!("run {id}") }),
        asked_at: at,
        expires_at: at + 60_000,
    };
    store.put_input_request(&ask("second", 20)).await.unwrap();
    store.put_input_request(&ask("first", 10)).await.unwrap();
    let stored = store.input_requests(&task.id).await.unwrap();
    let ids: Vec<_> = stored.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids, ["first", "second"]);
    assert_eq!(stored[0].request["title"], "run first");
    assert_eq!(stored[0].expires_at, 60_010);

    assert!(store.delete_input_request(&task.id, "first").await.unwrap());
    assert!(!store.delete_input_request(&task.id, "first").await.unwrap());
    assert_eq!(store.input_requests(&task.id).await.unwrap().len(), 1);

    // Re-queued: the run that asked is gone.
    store
        .requeue(&task.id, TaskStatus::Running, 30, "re-queued")
        .await
        .unwrap();
    assert!(store.input_requests(&task.id).await.unwrap().is_empty());

    // Finished: nothing is left to answer.
    claim_all(&store, WIDE).await;
    store.put_input_request(&ask("third", 40)).await.unwrap();
    let done = change(TaskStatus::Running, TaskStatus::Completed, 50);
    store.set_status(&task.id, &done).await.unwrap().unwrap();
    assert!(store.input_requests(&task.id).await.unwrap().is_empty());

    store.put_input_request(&ask("fourth", 60)).await.unwrap();
    store.clear_input_requests(&task.id).await.unwrap();
    assert!(store.input_requests(&task.id).await.unwrap().is_empty());
}
