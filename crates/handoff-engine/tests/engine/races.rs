use handoff_engine::Control;
use handoff_runner::Capabilities;
use handoff_task::TaskStatus;

use super::{
    common::agent,
    rig::{Trail, rig},
    scripted::Kind,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore() {
    let mut rig = rig(&[], Capabilities::default()).await;
    let id = rig.submit_task().await;
    let mut trail = Trail::new(&id);
    let mut run = rig.script.next_run().await;
    eprintln!("{:?}", trail.step(&rig.engine).await);
    run.output("hello").await;
    rig.until_event(&id, |e| e.message == "hello").await;
    eprintln!("{:?}", trail.step(&rig.engine).await);
    run.calls.hold(Kind::Cancel);
    let engine = rig.engine.clone();
    let cid = id.clone();
    let cancel = tokio::spawn(async move {
        engine
            .control(&agent("a"), &cid, Control::Cancel, Some("stop".into()))
            .await
    });
    let held = run.calls.next().await;
    eprintln!("{held:?}");
    eprintln!("{:?}", trail.step(&rig.engine).await);
    run.succeed().await;
    rig.until_done(&id).await;
    eprintln!("{:?}", trail.step(&rig.engine).await);
    let receipt = cancel.await.unwrap().unwrap();
    eprintln!("{} {}", receipt.changed, receipt.message);
    held.release();
    assert_eq!(receipt.task.status, TaskStatus::Cancelled);
    eprintln!("{:?}", rig.script.calls.log());
}
