//! Task events and artifacts.

use std::{path::PathBuf, sync::Arc};

use handoff_task::{ArtifactBody, ArtifactKind, EventKind, NewEvent, TaskId};
use serde_json::json;

use super::{
    ConformanceStore,
    support::{insert, new_task},
};
use crate::{NewArtifact, StoreError};

/// Events are numbered contiguously per task even under racing appends, page and tail in order,
/// and appending to a missing task fails.
pub async fn appended_events_are_numbered_contiguously<S: ConformanceStore>(store: S) {
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let out = |i: usize| {
        NewEvent::new(EventKind::Output, format!("line {i}")).with_data(json!({ "i": i }))
    };

    let seqs = store
        .append_events(&task.id, 10, &[out(0), out(1)])
        .await
        .unwrap();
    assert_eq!(seqs, vec![2, 3]);
    let seqs = store.append_events(&task.id, 11, &[out(2)]).await.unwrap();
    assert_eq!(seqs, vec![4]);
    assert!(
        store
            .append_events(&task.id, 11, &[])
            .await
            .unwrap()
            .is_empty()
    );

    let store = Arc::new(store);
    let mut handles = Vec::new();
    for i in 0..10 {
        let (store, id) = (Arc::clone(&store), task.id.clone());
        handles.push(tokio::spawn(async move {
            store
                .append_events(&id, 20, &[out(10 + 2 * i), out(11 + 2 * i)])
                .await
                .unwrap()
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        let seqs = h.await.unwrap();
        // One call's events stay together.
        assert_eq!(seqs[1], seqs[0] + 1);
        all.extend(seqs);
    }
    all.sort_unstable();
    assert_eq!(all, (5..=24).collect::<Vec<i64>>());

    let (page, total) = store.events(&task.id, 0, 1000).await.unwrap();
    assert_eq!(total, 24);
    assert_eq!(
        page.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=24).collect::<Vec<i64>>()
    );

    let (page, total) = store.events(&task.id, 5, 3).await.unwrap();
    assert_eq!(total, 24);
    assert_eq!(
        page.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![6, 7, 8]
    );
    assert_eq!(page[0].task_id, task.id);
    let (page, _) = store.events(&task.id, 100, 3).await.unwrap();
    assert!(page.is_empty());

    let recent = store.recent_events(&task.id, 3).await.unwrap();
    assert_eq!(
        recent.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![22, 23, 24]
    );
    let first = &store.recent_events(&task.id, 100).await.unwrap()[1];
    assert_eq!(
        (first.kind, first.message.as_str(), &first.data, first.at),
        (EventKind::Output, "line 0", &json!({ "i": 0 }), 10)
    );

    // The newest event of a kind is found however many of other kinds follow it.
    assert_eq!(
        store
            .last_event_of_kind(&task.id, EventKind::Tool)
            .await
            .unwrap(),
        None
    );
    let tool = NewEvent::new(EventKind::Tool, "bash: ls");
    store.append_events(&task.id, 30, &[tool]).await.unwrap();
    let later: Vec<NewEvent> = (0..30).map(|i| out(100 + i)).collect();
    store.append_events(&task.id, 31, &later).await.unwrap();
    let found = store
        .last_event_of_kind(&task.id, EventKind::Tool)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((found.seq, found.message.as_str()), (25, "bash: ls"));
    let newest = store
        .last_event_of_kind(&task.id, EventKind::Output)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(newest.seq, 55);

    let missing = TaskId::generate().unwrap();
    let err = store
        .append_events(&missing, 1, &[out(0)])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Database(_)), "{err:?}");
}

/// A task holds one artifact per kind; storing a kind again replaces it.
pub async fn artifacts_are_upserted_per_kind<S: ConformanceStore>(store: S) {
    let task = insert(&store, &new_task("agent-a", 0)).await;
    let output = NewArtifact {
        kind: ArtifactKind::Output,
        size: 5,
        capped: false,
        body: ArtifactBody::Inline(b"hello".to_vec()),
    };
    let log = NewArtifact {
        kind: ArtifactKind::Log,
        size: 1 << 40,
        capped: true,
        body: ArtifactBody::File(PathBuf::from("/data/artifacts/log.txt")),
    };
    store.put_artifact(&task.id, 10, &output).await.unwrap();
    store.put_artifact(&task.id, 11, &log).await.unwrap();
    let replaced = NewArtifact {
        size: 7,
        body: ArtifactBody::Inline(b"goodbye".to_vec()),
        ..output.clone()
    };
    store.put_artifact(&task.id, 12, &replaced).await.unwrap();

    let stored = store.artifacts(&task.id).await.unwrap();
    assert_eq!(stored.len(), 2);
    let out = stored
        .iter()
        .find(|a| a.kind == ArtifactKind::Output)
        .unwrap();
    assert_eq!(
        (out.size, out.capped, &out.body, out.created_at),
        (7, false, &ArtifactBody::Inline(b"goodbye".to_vec()), 12)
    );
    let log_row = stored.iter().find(|a| a.kind == ArtifactKind::Log).unwrap();
    assert_eq!(log_row.task_id, task.id);
    assert_eq!(
        (log_row.size, log_row.capped, &log_row.body),
        (1 << 40, true, &log.body)
    );
}
