//! The SQLite store with seams for races: a claim can be held right after it committed, so the
//! test acts while a task is `running` in the store but its run is not set up yet; a move to
//! `cancelled` can be held before it is written. Writes of a run's progress (events, artifacts,
//! state changes) can be made to fail, as on a full disk. Heartbeats can be stalled, as in a
//! suspended or overloaded machine, and the rescuer's passes are counted.

use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering},
};

use async_trait::async_trait;
use handoff_store::{
    ApprovalStore, AuditFilter, ClaimLimits, IdempotencyClaim, InsertOutcome, NewArtifact,
    SqliteStore, StatusChange, StoreError, TaskFilter, TaskPage, TaskStore,
};
use handoff_task::{
    AgentId, Approval, Artifact, AuditRecord, EventKind, NewEvent, NewTask, PendingInput, Task,
    TaskEvent, TaskId, TaskStatus,
};
use serde_json::Value;
use tokio::sync::{Notify, OwnedRwLockWriteGuard, RwLock, mpsc, oneshot};

use super::scripted::HANG;

/// One point of the store that can be held.
struct Hold {
    on: AtomicBool,
    tx: mpsc::UnboundedSender<(TaskId, oneshot::Sender<()>)>,
}

impl Hold {
    fn new() -> (Self, mpsc::UnboundedReceiver<(TaskId, oneshot::Sender<()>)>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let hold = Self {
            on: AtomicBool::new(false),
            tx,
        };
        (hold, rx)
    }

    /// Waits for the test's release when held.
    async fn pass(&self, id: &TaskId) {
        if self.on.load(Ordering::SeqCst) {
            let (release, released) = oneshot::channel();
            let _ = self.tx.send((id.clone(), release));
            let _ = released.await;
        }
    }
}

/// A store whose claims (once committed) and cancellations (before they are written) can be
/// held.
pub struct GatedStore {
    inner: SqliteStore,
    claims: Hold,
    cancels: Hold,
    failing: AtomicBool,
    /// State changes refused while writes fail.
    refused: AtomicU32,
    /// Heartbeats wait while the test holds this for writing.
    heartbeats: Arc<RwLock<()>>,
    /// Heartbeats written, and those that found this instance gone (declared lost).
    beats: AtomicU32,
    found_lost: AtomicU32,
    /// The latest `before` a rescuer pass expired instances with.
    expired_before: AtomicI64,
    /// Woken whenever one of the counts above changes, for [`Gates::until`].
    changed: Notify,
    /// Poses as a store several instances share (the engine then fences its runs).
    shared: AtomicBool,
}

type Held = mpsc::UnboundedReceiver<(TaskId, oneshot::Sender<()>)>;

/// The test's side: each held point is released by dropping (or sending on) its sender.
pub struct Gates {
    store: Arc<GatedStore>,
    claims: Held,
    cancels: Held,
}

impl GatedStore {
    pub fn new(inner: SqliteStore) -> (Arc<Self>, Gates) {
        let (claims, claimed) = Hold::new();
        let (cancels, cancelling) = Hold::new();
        let store = Arc::new(Self {
            inner,
            claims,
            cancels,
            failing: AtomicBool::new(false),
            refused: AtomicU32::new(0),
            heartbeats: Arc::new(RwLock::new(())),
            beats: AtomicU32::new(0),
            found_lost: AtomicU32::new(0),
            expired_before: AtomicI64::new(i64::MIN),
            changed: Notify::new(),
            shared: AtomicBool::new(false),
        });
        let gates = Gates {
            store: store.clone(),
            claims: claimed,
            cancels: cancelling,
        };
        (store, gates)
    }
}

async fn next(held: &mut Held, what: &str) -> (TaskId, oneshot::Sender<()>) {
    tokio::time::timeout(HANG, held.recv())
        .await
        .unwrap_or_else(|_| panic!("nothing was {what}"))
        .expect("the store is gone")
}

impl GatedStore {
    /// The error of a write while writes fail.
    fn refuse(&self) -> Result<(), StoreError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::Io {
                path: "handoff.db".to_owned(),
                source: std::io::Error::other("No space left on device"),
            });
        }
        Ok(())
    }
}

impl Gates {
    /// From now on (or no longer) events, artifacts and state changes fail to be written.
    pub fn fail_writes(&self, failing: bool) {
        self.store.failing.store(failing, Ordering::SeqCst);
    }

    /// State changes refused so far because writes fail.
    pub fn refused_status_changes(&self) -> u32 {
        self.store.refused.load(Ordering::SeqCst)
    }

    /// Waits until `done` holds, looking again at each refused write, heartbeat or rescuer pass;
    /// panics with `what` after a minute (the driver's retries back off for that long).
    pub async fn until(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let changed = self.store.changed.notified();
            let mut changed = std::pin::pin!(changed);
            // Registered before looking, so a change in between still wakes this wait.
            changed.as_mut().enable();
            if done(self) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                panic!("{what}");
            }
        }
    }

    /// The store poses as one several instances share (set before the engine starts).
    pub fn share(&self) {
        self.store.shared.store(true, Ordering::SeqCst);
    }

    /// Heartbeats wait until the guard is dropped.
    pub async fn stall_heartbeats(&self) -> OwnedRwLockWriteGuard<()> {
        self.store.heartbeats.clone().write_owned().await
    }

    /// Heartbeats written so far.
    pub fn heartbeats(&self) -> u32 {
        self.store.beats.load(Ordering::SeqCst)
    }

    /// Heartbeats so far that found this instance declared lost.
    pub fn heartbeats_found_lost(&self) -> u32 {
        self.store.found_lost.load(Ordering::SeqCst)
    }

    /// The latest cut-off a rescuer pass expired silent instances with.
    pub fn expired_before(&self) -> i64 {
        self.store.expired_before.load(Ordering::SeqCst)
    }

    /// Claims from now on wait, once committed, for the test.
    pub fn hold_claims(&self) {
        self.store.claims.on.store(true, Ordering::SeqCst);
    }

    /// Moves to `cancelled` from now on wait, before they are written, for the test.
    pub fn hold_cancels(&self) {
        self.store.cancels.on.store(true, Ordering::SeqCst);
    }

    /// The next claim committed and held.
    pub async fn next_claim(&mut self) -> (TaskId, oneshot::Sender<()>) {
        next(&mut self.claims, "claimed").await
    }

    /// The next cancellation held before it was written.
    pub async fn next_cancel(&mut self) -> (TaskId, oneshot::Sender<()>) {
        next(&mut self.cancels, "cancelled").await
    }
}

#[async_trait]
impl TaskStore for GatedStore {
    async fn claim(
        &self,
        limits: ClaimLimits,
        at: i64,
        lease: Option<&handoff_store::LeaseGrant>,
    ) -> Result<Option<Task>, StoreError> {
        let claimed = self.inner.claim(limits, at, lease).await?;
        if let Some(task) = &claimed {
            self.claims.pass(&task.id).await;
        }
        Ok(claimed)
    }

    async fn insert_task(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<InsertOutcome, StoreError> {
        self.inner.insert_task(task, idempotency, max_queued).await
    }

    async fn find_idempotent(
        &self,
        agent: &AgentId,
        claim: &IdempotencyClaim,
    ) -> Result<Option<Task>, StoreError> {
        self.inner.find_idempotent(agent, claim).await
    }

    async fn find_repeated(
        &self,
        task: &handoff_task::NewTask,
    ) -> Result<Option<Vec<TaskId>>, StoreError> {
        self.inner.find_repeated(task).await
    }

    async fn get_task(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.inner.get_task(id).await
    }

    async fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError> {
        self.inner.list_tasks(filter).await
    }

    async fn set_status(
        &self,
        id: &TaskId,
        change: &StatusChange,
    ) -> Result<Option<Task>, StoreError> {
        if change.to == TaskStatus::Cancelled {
            self.cancels.pass(id).await;
        }
        if let Err(e) = self.refuse() {
            self.refused.fetch_add(1, Ordering::SeqCst);
            self.changed.notify_waiters();
            return Err(e);
        }
        self.inner.set_status(id, change).await
    }

    async fn requeue(
        &self,
        id: &TaskId,
        from: TaskStatus,
        at: i64,
        reason: &str,
    ) -> Result<Option<Task>, StoreError> {
        self.inner.requeue(id, from, at, reason).await
    }

    async fn reopen(
        &self,
        id: &TaskId,
        reopen: &handoff_store::Reopen,
    ) -> Result<Option<Task>, StoreError> {
        self.inner.reopen(id, reopen).await
    }

    async fn set_runner_state(&self, id: &TaskId, state: Option<&Value>) -> Result<(), StoreError> {
        self.inner.set_runner_state(id, state).await
    }

    async fn set_workdir(&self, id: &TaskId, workdir: &str) -> Result<(), StoreError> {
        self.refuse()?;
        self.inner.set_workdir(id, workdir).await
    }

    async fn mark_result_delivered(&self, id: &TaskId, at: i64) -> Result<(), StoreError> {
        self.refuse()?;
        self.inner.mark_result_delivered(id, at).await
    }

    async fn append_events(
        &self,
        id: &TaskId,
        at: i64,
        events: &[NewEvent],
    ) -> Result<Vec<i64>, StoreError> {
        self.refuse()?;
        self.inner.append_events(id, at, events).await
    }

    async fn events(
        &self,
        id: &TaskId,
        offset: u64,
        limit: u32,
    ) -> Result<(Vec<TaskEvent>, u64), StoreError> {
        self.inner.events(id, offset, limit).await
    }

    async fn recent_events(&self, id: &TaskId, n: u32) -> Result<Vec<TaskEvent>, StoreError> {
        self.inner.recent_events(id, n).await
    }

    async fn last_event_of_kind(
        &self,
        id: &TaskId,
        kind: EventKind,
    ) -> Result<Option<TaskEvent>, StoreError> {
        self.inner.last_event_of_kind(id, kind).await
    }

    async fn put_artifact(
        &self,
        id: &TaskId,
        at: i64,
        artifact: &NewArtifact,
    ) -> Result<(), StoreError> {
        self.refuse()?;
        self.inner.put_artifact(id, at, artifact).await
    }

    async fn artifacts(&self, id: &TaskId) -> Result<Vec<Artifact>, StoreError> {
        self.inner.artifacts(id).await
    }

    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
        self.inner.count_by_status().await
    }

    async fn queue_position(&self, id: &TaskId) -> Result<Option<u64>, StoreError> {
        self.inner.queue_position(id).await
    }

    async fn tasks_in(&self, statuses: &[TaskStatus]) -> Result<Vec<Task>, StoreError> {
        self.inner.tasks_in(statuses).await
    }

    async fn purge_terminal(&self, before: i64, limit: u32) -> Result<Vec<Task>, StoreError> {
        self.inner.purge_terminal(before, limit).await
    }

    async fn put_input_request(&self, input: &PendingInput) -> Result<(), StoreError> {
        self.inner.put_input_request(input).await
    }

    async fn delete_input_request(
        &self,
        task: &TaskId,
        request_id: &str,
    ) -> Result<bool, StoreError> {
        self.inner.delete_input_request(task, request_id).await
    }

    async fn input_requests(&self, task: &TaskId) -> Result<Vec<PendingInput>, StoreError> {
        self.inner.input_requests(task).await
    }

    async fn clear_input_requests(&self, task: &TaskId) -> Result<(), StoreError> {
        self.inner.clear_input_requests(task).await
    }
}

#[async_trait]
impl handoff_store::InstanceStore for GatedStore {
    async fn register_instance(
        &self,
        record: &handoff_store::InstanceRecord,
    ) -> Result<(), StoreError> {
        self.inner.register_instance(record).await
    }

    async fn heartbeat(
        &self,
        id: &str,
        at: i64,
        lease_until: i64,
    ) -> Result<Option<u64>, StoreError> {
        let _open = self.heartbeats.read().await;
        let renewed = self.inner.heartbeat(id, at, lease_until).await;
        if matches!(renewed, Ok(None)) {
            self.found_lost.fetch_add(1, Ordering::SeqCst);
        }
        self.beats.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
        renewed
    }

    async fn set_draining(&self, id: &str) -> Result<(), StoreError> {
        self.inner.set_draining(id).await
    }

    async fn deregister_instance(&self, id: &str) -> Result<(), StoreError> {
        self.inner.deregister_instance(id).await
    }

    async fn instances(&self) -> Result<Vec<handoff_store::InstanceSummary>, StoreError> {
        self.inner.instances().await
    }

    async fn expire_instances(
        &self,
        before: i64,
        caller: &str,
    ) -> Result<Vec<handoff_store::InstanceRecord>, StoreError> {
        let expired = self.inner.expire_instances(before, caller).await;
        self.expired_before.fetch_max(before, Ordering::SeqCst);
        self.changed.notify_waiters();
        expired
    }

    async fn take_over(
        &self,
        id: &TaskId,
        predecessor: &str,
        expired_before: i64,
        grant: &handoff_store::LeaseGrant,
    ) -> Result<Option<Task>, StoreError> {
        self.inner
            .take_over(id, predecessor, expired_before, grant)
            .await
    }

    async fn rescuer_lock(&self, holder: &str, now: i64, until: i64) -> Result<bool, StoreError> {
        self.inner.rescuer_lock(holder, now, until).await
    }

    async fn take_rate(
        &self,
        key: &str,
        interval_ms: i64,
        tolerance_ms: i64,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        self.inner
            .take_rate(key, interval_ms, tolerance_ms, now)
            .await
    }

    async fn record_call(
        &self,
        caller: &str,
        key: &str,
        at: i64,
        since: i64,
        keep: u32,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.record_call(caller, key, at, since, keep).await
    }

    fn is_shared(&self) -> bool {
        self.shared.load(Ordering::SeqCst) || self.inner.is_shared()
    }
}

#[async_trait]
impl handoff_store::PeerStore for GatedStore {
    async fn post_command(
        &self,
        task: &TaskId,
        target: &str,
        body: &str,
        at: i64,
    ) -> Result<i64, StoreError> {
        self.inner.post_command(task, target, body, at).await
    }

    async fn take_commands(
        &self,
        target: &str,
        at: i64,
    ) -> Result<Vec<handoff_store::PostedCommand>, StoreError> {
        self.inner.take_commands(target, at).await
    }

    async fn take_task_commands(
        &self,
        task: &TaskId,
        at: i64,
    ) -> Result<Vec<handoff_store::PostedCommand>, StoreError> {
        self.inner.take_task_commands(task, at).await
    }

    async fn withdraw_command(&self, id: i64) -> Result<bool, StoreError> {
        self.inner.withdraw_command(id).await
    }

    async fn reply_command(&self, id: i64, reply: &str, at: i64) -> Result<bool, StoreError> {
        self.inner.reply_command(id, reply, at).await
    }

    async fn command_reply(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.inner.command_reply(id).await
    }

    async fn ran_on(&self, id: &TaskId) -> Result<Option<String>, StoreError> {
        self.inner.ran_on(id).await
    }

    async fn purge_commands(&self, before: i64) -> Result<u64, StoreError> {
        self.inner.purge_commands(before).await
    }

    async fn broadcast(&self, body: &str) -> Result<(), StoreError> {
        self.inner.broadcast(body).await
    }

    async fn signals(
        &self,
    ) -> Result<tokio::sync::broadcast::Receiver<handoff_store::StoreSignal>, StoreError> {
        self.inner.signals().await
    }
}

#[async_trait]
impl ApprovalStore for GatedStore {
    async fn insert_approval(&self, approval: &Approval) -> Result<(), StoreError> {
        self.inner.insert_approval(approval).await
    }

    async fn approvals_for_task(
        &self,
        agent: &AgentId,
        task: &TaskId,
        project: &str,
    ) -> Result<Vec<Approval>, StoreError> {
        self.inner.approvals_for_task(agent, task, project).await
    }

    async fn list_approvals(
        &self,
        agent: &AgentId,
        task: Option<&TaskId>,
    ) -> Result<Vec<Approval>, StoreError> {
        self.inner.list_approvals(agent, task).await
    }

    async fn revoke_approval(
        &self,
        agent: &AgentId,
        id: &str,
    ) -> Result<Option<Approval>, StoreError> {
        self.inner.revoke_approval(agent, id).await
    }

    async fn append_audit(&self, record: &AuditRecord) -> Result<i64, StoreError> {
        self.inner.append_audit(record).await
    }

    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        self.inner.audit(filter).await
    }
}
