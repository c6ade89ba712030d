//! Who sees which standing approvals — an agent its own, an operator naming a task those given
//! in it, whoever's task it is (as for every other read of a task) — and an answer with nothing
//! to answer.

use std::sync::Arc;

use handoff_engine::EngineError;
use handoff_protocol::tasks::{AnswerScope, ApprovalAnswer, ControlAction};
use handoff_store::{ApprovalStore, SqliteStore};
use handoff_task::{Approval, ApprovalScope, MessageType, Principal, TaskStatus};

use super::common::{agent, as_agent, config, start, start_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_naming_a_task_sees_the_approvals_given_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open(&config(&dir, &[]).database_path())
            .await
            .unwrap(),
    );
    let h = start_on(dir, &[], store.clone()).await;
    let id = h.submit("a", "true").await.task.id;
    h.wait_done("a", &id).await;
    let approval = Approval {
        id: format!("ap_{}", "0".repeat(32)),
        agent_id: agent("a"),
        scope: ApprovalScope::Task,
        task_id: id.clone(),
        project: "project".into(),
        permission: "bash".into(),
        pattern: "ls *".into(),
        created_at: 1,
    };
    store.insert_approval(&approval).await.unwrap();

    let operator = Principal::Operator(agent("ops"));
    let seen = h.engine.list_approvals(&operator, Some(&id)).await.unwrap();
    assert_eq!(seen, std::slice::from_ref(&approval));
    let owner = as_agent(&agent("a"));
    let own = h.engine.list_approvals(&owner, Some(&id)).await.unwrap();
    assert_eq!(own, [approval]);
    // Without a task an operator lists its own, of which it has none.
    assert!(
        h.engine
            .list_approvals(&operator, None)
            .await
            .unwrap()
            .is_empty()
    );
    // Another agent is told the task does not exist.
    let stranger = as_agent(&agent("b"));
    let refused = h.engine.list_approvals(&stranger, Some(&id)).await;
    assert!(
        matches!(refused, Err(EngineError::NotFound(_))),
        "a stranger sees no task: {refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_structured_answer_with_nothing_pending_is_refused_not_sent_as_chat() {
    let h = start(&[]).await;
    let id = h.submit("a", "sleep 300").await.task.id;
    h.wait_status("a", &id, TaskStatus::Running).await;
    let owner = as_agent(&agent("a"));
    let answer = ApprovalAnswer::allow(AnswerScope::Once).to_message();
    let refused = h
        .engine
        .message(&owner, &id, MessageType::Approval, answer, None)
        .await;
    match refused {
        Err(EngineError::Conflict(why)) => assert!(why.contains("nothing to approve"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Plain words of approval are still a message to the agent.
    let said = h
        .engine
        .message(&owner, &id, MessageType::Approval, "go ahead".into(), None)
        .await
        .unwrap();
    assert!(said.seq > 0);
    h.engine
        .control(&owner, &id, ControlAction::Cancel, None)
        .await
        .unwrap();
}
