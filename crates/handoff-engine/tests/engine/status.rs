//! What one status read carries: the last few events, the newest tool call, and for a finished
//! task the wider window where its closing text sits, so the status tool needs no second read.

use handoff_engine::CLOSING_EVENTS;
use handoff_runner::{Capabilities, RunEvent};
use handoff_task::{EventKind, NewEvent, TaskId, TaskStatus};

use super::{
    rig::{Rig, owner, rig},
    scripted::RunHandle,
};

/// The agent's closing text, then eight tool calls `<name>0`…`<name>7`, all recorded.
async fn answer_then_calls(rig: &Rig, run: &RunHandle, id: &TaskId, name: &str) {
    let text = NewEvent::new(EventKind::Text, "Done: fixed the test.");
    run.emit(RunEvent::Event(text)).await;
    for n in 0..8 {
        run.tool(&format!("{name}{n}")).await;
    }
    let last = format!("tool {name}7");
    rig.until_event(id, |e| e.message == last).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_status_read_finds_the_newest_call_and_a_finished_tasks_closing_text() {
    let mut rig = rig(&[], Capabilities::default()).await;
    let id = rig.submit_task().await;
    let run = rig.script.next_run().await;
    rig.until_status(&id, TaskStatus::Running).await;
    answer_then_calls(&rig, &run, &id, "read").await;
    let running = rig.engine.status(&owner(), &id).await.unwrap();
    assert!(running.closing_events.is_empty(), "only a finished task's");
    assert_eq!(running.recent_events.len(), 5);
    let last_call =
        |view: &handoff_engine::StatusView| view.last_tool_call.as_ref().map(|e| e.message.clone());
    assert_eq!(last_call(&running).as_deref(), Some("tool read7"));
    // Past the window the status reads: the call is still found.
    for n in 0..30 {
        let text = NewEvent::new(EventKind::Text, format!("thinking {n}"));
        run.emit(RunEvent::Event(text)).await;
    }
    rig.until_event(&id, |e| e.message == "thinking 29").await;
    let pushed = rig.engine.status(&owner(), &id).await.unwrap();
    assert_eq!(last_call(&pushed).as_deref(), Some("tool read7"));
    answer_then_calls(&rig, &run, &id, "check").await;
    let newer = rig.engine.status(&owner(), &id).await.unwrap();
    assert_eq!(last_call(&newer).as_deref(), Some("tool check7"));

    assert!(run.succeed().await);
    rig.until_done(&id).await;
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    let newest = |events: &[handoff_task::TaskEvent]| events.last().map(|e| e.seq);
    assert_eq!(view.recent_events.len(), 5);
    assert!(
        view.recent_events.iter().all(|e| e.kind != EventKind::Text),
        "the closing text is older than the last five events"
    );
    assert!(view.closing_events.len() <= CLOSING_EVENTS as usize);
    assert_eq!(newest(&view.closing_events), newest(&view.recent_events));
    assert!(
        view.closing_events
            .iter()
            .any(|e| e.kind == EventKind::Text && e.message == "Done: fixed the test."),
        "{:?}",
        view.closing_events
    );
}
