//! A task's writer: the only code that changes the task's block while it runs. It creates and
//! attaches the block, rewrites it when something changed — at most once per interval for
//! events, at once for a status change — and finishes with the final state, retrying failed
//! writes with back-off until they land or the task's retention ends.

use std::{sync::Arc, time::Duration};

use handoff_integration::{Slot, TaskOverview};
use handoff_task::{BlockPhase, NotifyState, WorkspaceRecord, unix_millis_now};
use serde_json::json;
use tokio::time::Instant;

use super::{EVENTS_READ, Shared, millis, notify};
use crate::{BLOCK_DESCRIPTION, LettaError, NewBlock, WorkspaceValue, client::Backoff, fit_value};

/// Writer-level retries (after the client's own): from 1 s up to a minute apart.
const RETRY: Backoff = Backoff {
    base: Duration::from_secs(1),
    cap: Duration::from_secs(60),
};

/// Why a writer stops early.
pub(crate) enum Halt {
    /// The process is shutting down; the record says where to resume.
    Stopping,
    /// The store failed; the sweeper restarts the writer later.
    Store(String),
}

impl From<handoff_store::StoreError> for Halt {
    fn from(e: handoff_store::StoreError) -> Self {
        Halt::Store(e.to_string())
    }
}

/// How one write step failed: Letta said no, or the writer must stop.
enum Fail {
    Letta(LettaError),
    Halt(Halt),
}

impl From<LettaError> for Fail {
    fn from(e: LettaError) -> Self {
        match e {
            LettaError::Stopped { .. } => Fail::Halt(Halt::Stopping),
            e => Fail::Letta(e),
        }
    }
}

impl From<Halt> for Fail {
    fn from(h: Halt) -> Self {
        Fail::Halt(h)
    }
}

/// Runs the task's writer to its end.
pub(crate) async fn run(shared: &Arc<Shared>, id: &handoff_task::TaskId, slot: &Slot) {
    let record = match shared.store.workspace(id).await {
        Ok(Some(record)) => record,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(task = %id, error = %e, "cannot read the Letta record");
            return;
        }
    };
    let mut writer = Writer {
        shared,
        record,
        last_value: None,
        last_write: None,
        failures: 0,
    };
    let outcome = async {
        if writer.record.phase.is_live() {
            writer.keep_current(slot).await?;
        }
        notify::deliver(shared, &mut writer.record, slot).await
    }
    .await;
    match outcome {
        Ok(()) | Err(Halt::Stopping) => {}
        Err(Halt::Store(e)) => tracing::warn!(task = %id, error = %e, "Letta writer stopped"),
    }
    shared.sweep.notify_one();
}

struct Writer<'a> {
    shared: &'a Arc<Shared>,
    record: WorkspaceRecord,
    /// The value last written, to skip writing the same again.
    last_value: Option<String>,
    last_write: Option<Instant>,
    /// Consecutive failed attempts.
    failures: u32,
}

impl Writer<'_> {
    /// Writes until the block holds the task's final state.
    async fn keep_current(&mut self, slot: &Slot) -> Result<(), Halt> {
        let mut first = true;
        loop {
            if !first {
                self.wait_for_change(slot).await?;
            }
            first = false;
            let status_flag = slot.take_status();
            // The look below covers whatever events came.
            slot.take_events();
            let snapshot = match self
                .shared
                .source
                .overview(&self.record.task_id, EVENTS_READ)
                .await
            {
                Ok(Some(snapshot)) => snapshot,
                Ok(None) => return self.task_gone().await,
                Err(e) => {
                    tracing::warn!(task = %self.record.task_id, error = %e, "cannot read the task");
                    slot.mark(status_flag);
                    self.pause_after_failure().await?;
                    continue;
                }
            };
            let terminal = snapshot.task.status.is_terminal();
            let result = if !self.shared.config.workspace_blocks {
                Ok(())
            } else if self.record.phase == BlockPhase::Creating {
                self.create(&snapshot).await
            } else {
                self.write(&snapshot).await
            };
            // The final value must be what stays: a write that stalled on the way may land
            // after it, so read it back and write again if something else is there.
            let result = match result {
                Ok(()) if terminal && self.shared.config.workspace_blocks => {
                    self.confirm_final().await
                }
                other => other,
            };
            match result {
                Ok(()) => {
                    self.failures = 0;
                    self.record.last_error = None;
                }
                Err(Fail::Halt(h)) => return Err(h),
                // The agent is gone or Letta refuses the request itself: trying again cannot help.
                Err(Fail::Letta(e)) if e.is_permanent() => {
                    self.shared.meter.block_write_failed();
                    return self.abandon(&e).await;
                }
                Err(Fail::Letta(e)) => {
                    self.shared.meter.block_write_failed();
                    if self.failed(&e, &snapshot).await? {
                        return Ok(());
                    }
                    // Keep the reason to write: the next pass must happen.
                    slot.mark(status_flag || terminal);
                    self.pause_after_failure().await?;
                    continue;
                }
            }
            if terminal {
                let now = unix_millis_now();
                self.record.phase = if self.record.block_id.is_some() {
                    BlockPhase::Final
                } else {
                    BlockPhase::Deleted
                };
                self.record.detach_at =
                    Some(now.saturating_add(millis(self.shared.config.detach_delay)));
                self.save().await?;
                return Ok(());
            }
        }
    }

    /// Waits until a write is due: at once for a status change, else once events arrived and
    /// the interval since the last write passed.
    async fn wait_for_change(&self, slot: &Slot) -> Result<(), Halt> {
        loop {
            if slot.status_marked() {
                return Ok(());
            }
            let due = self
                .last_write
                .map(|at| at + self.shared.config.min_update_interval);
            if slot.events_marked() {
                match due {
                    Some(due) if due > Instant::now() => {
                        tokio::select! {
                            () = tokio::time::sleep_until(due) => return Ok(()),
                            () = slot.woken() => continue,
                            () = self.shared.stop.cancelled() => return Err(Halt::Stopping),
                        }
                    }
                    _ => return Ok(()),
                }
            }
            tokio::select! {
                () = slot.woken() => {}
                () = self.shared.stop.cancelled() => return Err(Halt::Stopping),
            }
        }
    }

    /// Creates the block (or adopts the one an unanswered earlier attempt created) and
    /// attaches it to the agent.
    async fn create(&mut self, snapshot: &TaskOverview) -> Result<(), Fail> {
        let client = &self.shared.client;
        let value = self.value(snapshot);
        if self.record.block_id.is_none() {
            // A create whose answer was lost may have made the block: find it by its label
            // (it names the task, so nobody else's block carries it).
            let task = self.record.task_id.as_str();
            let existing = client
                .blocks_labelled(&self.record.label)
                .await?
                .into_iter()
                .find(|b| b.label.as_deref() == Some(self.record.label.as_str()));
            let block = match existing {
                Some(block) => block,
                None => {
                    let block = client
                        .create_block(&NewBlock {
                            label: self.record.label.clone(),
                            description: BLOCK_DESCRIPTION.to_owned(),
                            value: value.clone(),
                            limit: self.shared.config.block_limit,
                            metadata: json!({ "handoff_task_id": task }),
                            tags: vec!["handoff".to_owned()],
                        })
                        .await?;
                    self.count_write(&value);
                    self.last_value = Some(value.clone());
                    block
                }
            };
            self.record.block_id = Some(block.id);
            self.save().await?;
        }
        let block_id = self.record.block_id.clone().unwrap_or_default();
        match client
            .attach_block(self.record.agent_id.as_str(), &block_id)
            .await
        {
            Ok(()) => {}
            // The agent already holds a block with this label: ours, attached by an attempt
            // whose answer was lost, or a stray twin; keep the attached one.
            Err(LettaError::Conflict { .. }) => self.adopt_attached(&block_id).await?,
            Err(e) => return Err(e.into()),
        }
        self.record.phase = BlockPhase::Attached;
        self.record.last_error = None;
        self.save().await?;
        let block_id = self.record.block_id.clone().unwrap_or_default();
        let message = format!(
            "Letta: workspace block {} attached to {} ({block_id})",
            self.record.label, self.record.agent_id
        );
        self.shared
            .note(&self.record.task_id, "block_attached", message)
            .await;
        // The value may be stale by now (the block was found, not made): write it again.
        if self.last_value.as_deref() != Some(value.as_str()) {
            self.write(snapshot).await?;
        }
        Ok(())
    }

    /// After a 409 on attach: use the block the agent holds under our label.
    async fn adopt_attached(&mut self, ours: &str) -> Result<(), LettaError> {
        let client = &self.shared.client;
        let held = client
            .agent_blocks(self.record.agent_id.as_str())
            .await?
            .into_iter()
            .find(|b| b.label.as_deref() == Some(self.record.label.as_str()));
        match held {
            Some(held) if held.id != ours => {
                if let Err(e) = client.delete_block(ours).await {
                    tracing::debug!(error = %e, "could not delete a duplicate block");
                }
                self.record.block_id = Some(held.id);
                // Its value is unknown: make sure the next write happens.
                self.last_value = None;
                Ok(())
            }
            Some(_) => Ok(()),
            None => Err(LettaError::Conflict {
                what: "attach block",
                detail: "the agent refused the label but holds no block with it".to_owned(),
            }),
        }
    }

    /// Writes the snapshot's value unless it is what the block already holds.
    async fn write(&mut self, snapshot: &TaskOverview) -> Result<(), Fail> {
        let value = self.value(snapshot);
        if self.last_value.as_deref() == Some(value.as_str()) {
            return Ok(());
        }
        let block_id = self.record.block_id.clone().unwrap_or_default();
        match self.shared.client.update_block(&block_id, &value).await {
            Ok(()) => {}
            Err(LettaError::NotFound { .. }) => {
                // Someone deleted the block: make a new one on the next pass.
                self.record.block_id = None;
                self.record.phase = BlockPhase::Creating;
                return Err(Fail::Letta(LettaError::Exhausted {
                    what: "update block",
                    attempts: 1,
                    last: "the block was deleted outside Handoff; creating it again".to_owned(),
                }));
            }
            Err(e) => return Err(e.into()),
        }
        self.count_write(&value);
        self.last_value = Some(value);
        Ok(self.save().await?)
    }

    /// Reads the block back; a value other than the one last written forces another write.
    async fn confirm_final(&mut self) -> Result<(), Fail> {
        let block_id = self.record.block_id.clone().unwrap_or_default();
        let stored = self.shared.client.block(&block_id).await?;
        if self.last_value.as_deref() == Some(stored.value.as_str()) {
            return Ok(());
        }
        self.last_value = None;
        Err(Fail::Letta(LettaError::Exhausted {
            what: "confirm final write",
            attempts: 1,
            last: "the block holds an older value; writing the final state again".to_owned(),
        }))
    }

    fn value(&self, snapshot: &TaskOverview) -> String {
        let limit = usize::try_from(self.shared.config.block_limit).unwrap_or(usize::MAX);
        fit_value(WorkspaceValue::from_snapshot(snapshot), limit)
    }

    fn count_write(&mut self, value: &str) {
        self.shared.meter.block_written();
        self.record.writes += 1;
        self.record.bytes_written += value.len() as u64;
        self.last_write = Some(Instant::now());
    }

    /// Records a failed attempt; gives up (abandons the block, and returns true) once the
    /// task's retention ended.
    async fn failed(&mut self, e: &LettaError, snapshot: &TaskOverview) -> Result<bool, Halt> {
        self.failures += 1;
        let first = self.record.last_error.is_none();
        self.record.last_error = Some(e.to_string());
        if self.shared.retention_over(snapshot.task.completed_at) {
            self.abandon(e).await?;
            return Ok(true);
        }
        self.save().await?;
        if first {
            let message = format!("Letta: workspace block not updated yet, retrying: {e}");
            self.shared
                .note(&self.record.task_id, "retrying", message)
                .await;
        }
        Ok(false)
    }

    /// Gives the block up for good (the agent is gone, or retention ended).
    async fn abandon(&mut self, e: &LettaError) -> Result<(), Halt> {
        self.remove_soon();
        if matches!(e, LettaError::NotFound { .. }) && self.record.notify.is_owed() {
            // The agent itself is gone: nobody to notify.
            self.record.notify = NotifyState::Failed;
        }
        self.record.last_error = Some(e.to_string());
        self.save().await?;
        let message = format!("Letta: gave up on the workspace block: {e}");
        self.shared
            .note(&self.record.task_id, "abandoned", message)
            .await;
        Ok(())
    }

    /// The task was purged while its writer ran: schedule the block's removal now.
    async fn task_gone(&mut self) -> Result<(), Halt> {
        self.remove_soon();
        if self.record.notify.is_owed() {
            self.record.notify = NotifyState::Failed;
        }
        self.save().await
    }

    /// Ends the block's life early: a block that exists is detached (and later deleted) at
    /// the sweeper's next pass; a record without one is done.
    fn remove_soon(&mut self) {
        if self.record.block_id.is_some() {
            self.record.phase = BlockPhase::Final;
            self.record.detach_at = Some(unix_millis_now());
        } else {
            self.record.phase = BlockPhase::Abandoned;
        }
    }

    async fn pause_after_failure(&self) -> Result<(), Halt> {
        tokio::select! {
            () = tokio::time::sleep(RETRY.wait(self.failures.max(1))) => Ok(()),
            () = self.shared.stop.cancelled() => Err(Halt::Stopping),
        }
    }

    async fn save(&mut self) -> Result<(), Halt> {
        Ok(self.shared.save(&mut self.record).await?)
    }
}
