//! Claiming the next queued task within the concurrency limits.

use std::{collections::HashSet, sync::Arc};

use handoff_task::TaskStatus;
use serde_json::json;

use super::{
    ConformanceStore,
    support::{ROOMY, WIDE, change, claim_all, insert, new_task, race, status_of},
};
use crate::{ClaimLimits, InsertOutcome};

/// Racing claims take exactly the free slots, oldest first, each with its `running` event.
pub async fn concurrent_claims_are_exact_and_fifo<S: ConformanceStore>(store: S) {
    let store = Arc::new(store);

    let mut submitted = race(50, |i| {
        let store = Arc::clone(&store);
        async move {
            let agent_name = format!("agent-{}", i % 5);
            match store
                .insert_task(&new_task(&agent_name, 0), None, ROOMY)
                .await
                .unwrap()
            {
                InsertOutcome::Created(t) => t,
                other => panic!("{other:?}"),
            }
        }
    })
    .await;
    submitted.sort_by_key(|t| t.queue_seq);
    let seqs: HashSet<i64> = submitted.iter().map(|t| t.queue_seq).collect();
    assert_eq!(seqs.len(), 50);

    let limits = ClaimLimits {
        max_active: 2,
        max_active_per_agent: 50,
    };
    let claims = race(50, |_| {
        let store = Arc::clone(&store);
        async move { store.claim_next(limits, 100).await.unwrap() }
    })
    .await;
    let mut claimed: Vec<_> = claims.into_iter().flatten().collect();
    assert_eq!(claimed.len(), 2);
    claimed.sort_by_key(|t| t.queue_seq);
    let claimed_ids: Vec<_> = claimed.iter().map(|t| t.id.clone()).collect();
    let oldest: Vec<_> = submitted[..2].iter().map(|t| t.id.clone()).collect();
    assert_eq!(claimed_ids, oldest);
    for t in &claimed {
        assert_eq!(t.status, TaskStatus::Running);
        assert_eq!(t.started_at, Some(100));
        let (events, _) = store.events(&t.id, 0, 10).await.unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].data, json!({ "from": "queued", "to": "running" }));
    }
    assert!(store.claim_next(limits, 100).await.unwrap().is_none());

    store
        .set_status(
            &claimed[0].id,
            &change(TaskStatus::Running, TaskStatus::Completed, 200),
        )
        .await
        .unwrap()
        .unwrap();
    let next = store.claim_next(limits, 300).await.unwrap().unwrap();
    assert_eq!(next.id, submitted[2].id);
    assert!(store.claim_next(limits, 300).await.unwrap().is_none());

    let counts = store.count_by_status().await.unwrap();
    assert_eq!(
        counts,
        vec![
            (TaskStatus::Queued, 47),
            (TaskStatus::Running, 2),
            (TaskStatus::Completed, 1),
        ]
    );
}

/// Among queued tasks, the higher priority is claimed first.
pub async fn claims_prefer_priority<S: ConformanceStore>(store: S) {
    let low = insert(&store, &new_task("agent-a", 0)).await;
    let high = insert(&store, &new_task("agent-a", 5)).await;
    let claimed = claim_all(&store, WIDE).await;
    assert_eq!(claimed, vec![high.id.clone(), low.id.clone()]);
}

/// An agent at its own limit (paused tasks count) is skipped for another agent's task; with no
/// free slot nothing is claimed.
pub async fn claims_skip_agents_at_their_limit<S: ConformanceStore>(store: S) {
    // agent-a holds one slot (paused still counts); its next task waits, agent-b's goes.
    let a1 = insert(&store, &new_task("agent-a", 0)).await;
    let a2 = insert(&store, &new_task("agent-a", 9)).await;
    let b1 = insert(&store, &new_task("agent-b", 0)).await;
    let per_agent = ClaimLimits {
        max_active: 10,
        max_active_per_agent: 1,
    };
    let first = store.claim_next(per_agent, 1).await.unwrap().unwrap();
    assert_eq!(first.id, a2.id);
    store
        .set_status(&a2.id, &change(TaskStatus::Running, TaskStatus::Paused, 2))
        .await
        .unwrap()
        .unwrap();
    let second = store.claim_next(per_agent, 3).await.unwrap().unwrap();
    assert_eq!(second.id, b1.id);
    assert!(store.claim_next(per_agent, 4).await.unwrap().is_none());
    assert_eq!(status_of(&store, &a1.id).await, TaskStatus::Queued);

    let none = ClaimLimits {
        max_active: 0,
        max_active_per_agent: 5,
    };
    assert!(store.claim_next(none, 5).await.unwrap().is_none());
}

/// Many claimers at once, with queued work from several agents: neither the global limit nor
/// any agent's limit is exceeded, and every agent with work gets its share.
pub async fn concurrent_claims_respect_the_per_agent_limit<S: ConformanceStore>(store: S) {
    let store = Arc::new(store);
    for i in 0..12 {
        let agent_name = format!("agent-{}", i % 3);
        store
            .insert_task(&new_task(&agent_name, 0), None, ROOMY)
            .await
            .unwrap();
    }
    let limits = ClaimLimits {
        max_active: 5,
        max_active_per_agent: 2,
    };
    let claims = race(30, |_| {
        let store = Arc::clone(&store);
        async move { store.claim_next(limits, 100).await.unwrap() }
    })
    .await;
    let mut per_agent = std::collections::HashMap::<String, u32>::new();
    let mut total = 0;
    for t in claims.into_iter().flatten() {
        *per_agent.entry(t.agent_id.as_str().to_owned()).or_default() += 1;
        total += 1;
    }
    assert_eq!(total, 5, "the global limit is exact: {per_agent:?}");
    assert!(per_agent.values().all(|&n| n <= 2), "{per_agent:?}");
    assert_eq!(per_agent.len(), 3, "{per_agent:?}");
    let running = store.tasks_in(&[TaskStatus::Running]).await.unwrap();
    assert_eq!(running.len(), 5);
}
