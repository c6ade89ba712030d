//! A task's first run on an executor that keeps agents started ahead of tasks: the task takes
//! a waiting agent's directory as its own (a sandbox binds its directory when it starts, so the
//! agent cannot come to the task's). The move is recorded before the run starts, so every later
//! reader — files, diffs, checks, retention — finds the task where it works.

use std::{path::Path, sync::Arc};

use handoff_runner::Claim;
use handoff_task::{CompletionPolicy, EventKind, NewEvent, Task};
use serde_json::json;

use crate::{plan::RunPlan, state::EngineState, supervisor::RunLink};

/// The task as it runs, and the agent it claimed, if it took one. A task keeps its own
/// directory when it chose one, already has one (a re-queued run), runs under the manager
/// policy (which starts its own runs), or no agent waits.
pub(crate) async fn claim(
    inner: &Arc<EngineState>,
    plan: &RunPlan,
    link: &RunLink,
    mut task: Task,
) -> (Task, Option<Claim>) {
    if task.options.caller_workdir
        || tokio::fs::metadata(Path::new(&task.workdir)).await.is_ok()
        || plan.completion.policy == CompletionPolicy::Manager
    {
        return (task, None);
    }
    let Some(executor) = plan.executor.as_ref() else {
        return (task, None);
    };
    // A claim may wait for an agent still starting; a cancel or pause meanwhile ends the wait.
    let claimed = tokio::select! {
        claim = executor.claim() => claim,
        () = link.stopped() => None,
    };
    let Some(claim) = claimed else {
        return (task, None);
    };
    let workdir = claim.workdir().display().to_string();
    if let Err(e) = inner.store.set_workdir(&task.id, &workdir).await {
        // The claim goes (its agent with it); the task starts its own, in its own directory.
        tracing::warn!(task = %task.id, error = %e, "could not move the task to a pooled agent");
        return (task, None);
    }
    let event = NewEvent::new(
        EventKind::Log,
        format!("took an agent started ahead of the task; the task works in {workdir}"),
    )
    .with_data(json!({ "workdir": workdir, "pooled": true }));
    if let Err(e) = inner.record(&task.id, event).await {
        tracing::warn!(task = %task.id, error = %e, "could not record the pooled start");
    }
    // Its model token was made for its slot: from now on the gateway counts it as this run's.
    inner.slots.bind(claim.slot(), &task.id, task.fence);
    task.workdir = workdir;
    (task, Some(claim))
}
