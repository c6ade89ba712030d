//! One run as its driver (the lifecycle, `follow`, the evaluator) holds it: the engine, the task
//! as it runs, the run's plan, the executor it runs on and the link to its supervisor. Built
//! once the executor is known and handed down whole, so no step looks any of it up again.

use std::{path::PathBuf, sync::Arc};

use handoff_runner::Executor;
use handoff_task::{EventKind, NewEvent, Task};

use crate::{EngineError, plan::RunPlan, state::EngineState, supervisor::RunLink};

/// The driver's view of one run.
#[derive(Clone, Copy)]
pub(crate) struct Driver<'a> {
    pub inner: &'a Arc<EngineState>,
    pub task: &'a Task,
    pub plan: &'a RunPlan,
    pub executor: &'a Arc<dyn Executor>,
    pub link: &'a RunLink,
}

impl Driver<'_> {
    /// Records one of Handoff's own notes on the task.
    pub(crate) async fn note(&self, note: String) -> Result<(), EngineError> {
        record_note(self.inner, self.task, note).await
    }

    /// Whether the task works on a branch of its own: its directory is Handoff's, a worktree
    /// of a repository (a caller's directory is never committed in).
    pub(crate) fn on_branch(&self) -> bool {
        self.repository().is_some()
    }

    /// The repository the task's directory is a worktree of, if it is one.
    pub(crate) fn repository(&self) -> Option<PathBuf> {
        self.inner.workdirs.repository_for(&self.task.options)
    }
}

/// Records one of Handoff's own notes on `task`.
pub(crate) async fn record_note(
    inner: &EngineState,
    task: &Task,
    note: String,
) -> Result<(), EngineError> {
    inner
        .record(&task.id, NewEvent::new(EventKind::Log, note))
        .await
        .map(drop)
}
