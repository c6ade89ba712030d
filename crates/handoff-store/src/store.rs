use async_trait::async_trait;
use handoff_task::{
    AgentId, Approval, Artifact, ArtifactBody, ArtifactKind, AuditRecord, EventKind, ExitInfo,
    NewEvent, NewTask, PendingInput, Task, TaskEvent, TaskId, TaskOptions, TaskStatus,
    WorkspaceRecord,
};
use serde_json::Value;

use crate::StoreError;

/// An idempotency key to honour on insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyClaim {
    /// The key, scoped to the task's agent.
    pub key: String,
    /// Keys older than this (Unix ms) are expired and may be reused.
    pub not_before: i64,
}

/// The result of [`TaskStore::insert_task`].
#[derive(Debug, Clone, PartialEq)]
pub enum InsertOutcome {
    /// A new task was stored (status `queued`, with a `queued` status event as seq 1).
    Created(Task),
    /// The agent already submitted this idempotency key within the window; nothing was written.
    Existing(Task),
    /// The backlog already holds `max_queued` queued tasks; nothing was written.
    QueueFull {
        /// Queued tasks right now.
        queued: u64,
    },
    /// The task's [`handoff_task::RepeatGuard`] refused it: these identical submissions of the
    /// agent are still unfinished (oldest first); nothing was written.
    Repeated {
        /// The unfinished identical tasks.
        active: Vec<TaskId>,
    },
}

/// Concurrency limits for [`TaskStore::claim_next`]. Paused and input-required tasks hold slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimLimits {
    /// Active tasks across all agents.
    pub max_active: u32,
    /// Active tasks of one agent.
    pub max_active_per_agent: u32,
}

/// The lease a claim grants: which instance runs the task, and until when unless renewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseGrant {
    /// The claiming instance's id.
    pub owner: String,
    /// When the lease runs out unless the owner's heartbeat renews it (Unix ms).
    pub until: i64,
}

/// A Handoff process registered in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRecord {
    /// Unique per process start.
    pub id: String,
    /// The machine it runs on.
    pub host: String,
    /// Its process id there.
    pub pid: u32,
    /// When it started (Unix ms).
    pub started: i64,
    /// Its latest heartbeat (Unix ms).
    pub heartbeat: i64,
    /// Whether it stopped claiming (shutting down).
    pub draining: bool,
}

/// An instance and how many tasks it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSummary {
    /// The instance.
    pub instance: InstanceRecord,
    /// Active tasks whose lease it holds.
    pub tasks_held: u64,
}

/// A state change for [`TaskStore::set_status`].
#[derive(Debug, Clone, PartialEq)]
pub struct StatusChange {
    /// The state the caller believes the task is in; the change applies only if it still is.
    pub from: TaskStatus,
    /// The new state (the caller has checked `from.can_become(to)`).
    pub to: TaskStatus,
    /// When (Unix ms). Sets `started_at` on the first move to running and `completed_at` on a
    /// terminal move.
    pub at: i64,
    /// Process exit info, on terminal moves.
    pub exit: Option<ExitInfo>,
    /// Error text, on failed/timeout/cancelled.
    pub error: Option<String>,
    /// The status event's message.
    pub reason: String,
}

/// A follow-up round for [`TaskStore::reopen`].
#[derive(Debug, Clone, PartialEq)]
pub struct Reopen {
    /// The terminal state the caller found the task in; the change applies only if it still is.
    pub from: TaskStatus,
    /// When (Unix ms).
    pub at: i64,
    /// The task's options for the new round (its `round` counted up).
    pub options: TaskOptions,
    /// The status event's message.
    pub reason: String,
    /// Recorded right after the status event, in the same transaction (the follow-up message:
    /// the run that starts the round must find it).
    pub events: Vec<NewEvent>,
}

/// Which tasks [`TaskStore::list_tasks`] returns, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskFilter {
    /// Only this agent's tasks.
    pub agent_id: Option<AgentId>,
    /// Only tasks in one of these states (empty: all).
    pub statuses: Vec<TaskStatus>,
    /// Page size.
    pub limit: u32,
    /// Only tasks submitted before this `queue_seq` (the previous page's cursor).
    pub before_seq: Option<i64>,
    /// Only tasks whose description contains this text, in any case (a substring, not a
    /// pattern: `%`, `_` and `\` match themselves).
    pub text: Option<String>,
}

/// One page of [`TaskStore::list_tasks`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// The tasks, newest first.
    pub tasks: Vec<Task>,
    /// The `before_seq` of the next page, when there is one.
    pub next_before_seq: Option<i64>,
}

/// An artifact to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewArtifact {
    /// What it holds (one artifact per kind per task; storing again replaces it).
    pub kind: ArtifactKind,
    /// Full size.
    pub size: u64,
    /// Whether bytes beyond the configured cap were dropped.
    pub capped: bool,
    /// The bytes or the file they were spilled to.
    pub body: ArtifactBody,
}

/// Everything the engine stores: tasks with their events, artifacts and open requests, and
/// the approvals and audit trail that govern them. Integrations keep their own records
/// elsewhere ([`WorkspaceStore`] for Letta).
pub trait Store: TaskStore + ApprovalStore + InstanceStore + PeerStore {}

impl<T: TaskStore + ApprovalStore + InstanceStore + PeerStore + ?Sized> Store for T {}

/// A command posted to the instance that holds a task's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostedCommand {
    /// Its id, which its reply is read by.
    pub id: i64,
    /// The task it is about.
    pub task: TaskId,
    /// The instance it is for.
    pub target: String,
    /// What it asks, as the engine wrote it.
    pub body: String,
    /// When it was posted (Unix ms).
    pub created: i64,
}

/// Wake-ups kept for a slow receiver before it lags (and gets [`StoreSignal::Missed`]).
pub(crate) const SIGNAL_BACKLOG: usize = 256;

/// A wake-up about what instances sharing the store tell each other (PostgreSQL `NOTIFY`; on
/// SQLite, this handle's own writes). A wake-up only says where to look: the store holds the
/// truth, and a waiter re-reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSignal {
    /// A command was posted to instance `target`.
    CommandPosted {
        /// The instance it is for.
        target: String,
    },
    /// Command `id` was answered.
    CommandReplied {
        /// The command.
        id: i64,
    },
    /// A text an instance broadcast ([`PeerStore::broadcast`]).
    Broadcast(String),
    /// Wake-ups may have been lost (the listening connection broke, or a receiver lagged):
    /// re-read everything waited on.
    Missed,
}

/// What instances sharing a store tell each other: commands for a run another instance holds,
/// their replies, and broadcast notices, each with a wake-up ([`StoreSignal`]).
#[async_trait]
pub trait PeerStore: Send + Sync + 'static {
    /// Posts `body` for instance `target` about task `task`; returns the command's id.
    async fn post_command(
        &self,
        task: &TaskId,
        target: &str,
        body: &str,
        at: i64,
    ) -> Result<i64, StoreError>;

    /// Takes every command posted to `target` and not taken yet (each is taken once).
    async fn take_commands(&self, target: &str, at: i64) -> Result<Vec<PostedCommand>, StoreError>;

    /// Takes every command about `task` that no instance took yet, whoever it was posted to:
    /// the instance that took the task over from a lost one answers them (each is taken once).
    async fn take_task_commands(
        &self,
        task: &TaskId,
        at: i64,
    ) -> Result<Vec<PostedCommand>, StoreError>;

    /// Withdraws command `id` unless an instance took it already: `true` when it was withdrawn
    /// (nobody will ever apply it), `false` when it was taken (its answer will come).
    async fn withdraw_command(&self, id: i64) -> Result<bool, StoreError>;

    /// Answers command `id` (a second answer is ignored: `false`).
    async fn reply_command(&self, id: i64, reply: &str, at: i64) -> Result<bool, StoreError>;

    /// Command `id`'s answer, once given.
    async fn command_reply(&self, id: i64) -> Result<Option<String>, StoreError>;

    /// The instance that last ran task `id` (kept after the task ends; its disk holds the
    /// task's files), if any did.
    async fn ran_on(&self, id: &TaskId) -> Result<Option<String>, StoreError>;

    /// Forgets the commands posted before `before`; returns how many.
    async fn purge_commands(&self, before: i64) -> Result<u64, StoreError>;

    /// Tells every instance listening `body` (at most 7,000 bytes; nothing on SQLite, where
    /// no other instance can listen).
    async fn broadcast(&self, body: &str) -> Result<(), StoreError>;

    /// The wake-ups from now on; the first call starts listening.
    async fn signals(&self) -> Result<tokio::sync::broadcast::Receiver<StoreSignal>, StoreError>;
}

/// The instances sharing a store, their heartbeats, and the leases those renew.
#[async_trait]
pub trait InstanceStore: Send + Sync + 'static {
    /// Registers (or re-registers) an instance.
    async fn register_instance(&self, record: &InstanceRecord) -> Result<(), StoreError>;

    /// Records the instance's heartbeat at `at` and renews the lease of every active task it
    /// owns to `lease_until`. Returns how many leases were renewed, or `None` when the
    /// instance is no longer registered (another instance declared it lost).
    async fn heartbeat(
        &self,
        id: &str,
        at: i64,
        lease_until: i64,
    ) -> Result<Option<u64>, StoreError>;

    /// Marks the instance as draining (it claims nothing more).
    async fn set_draining(&self, id: &str) -> Result<(), StoreError>;

    /// Removes the instance (clean shutdown, or declared lost).
    async fn deregister_instance(&self, id: &str) -> Result<(), StoreError>;

    /// Every registered instance with the number of tasks it holds, oldest first.
    async fn instances(&self) -> Result<Vec<InstanceSummary>, StoreError>;

    /// Removes the instances other than `caller` whose last heartbeat is older than `before`
    /// (declared lost: a later heartbeat of theirs finds no row) and returns them. The caller
    /// is alive by asking: a stall of its own heartbeat must not make it stop its own runs.
    async fn expire_instances(
        &self,
        before: i64,
        caller: &str,
    ) -> Result<Vec<InstanceRecord>, StoreError>;

    /// Moves active task `id`'s lease from `predecessor` (this instance's dead previous
    /// process on the same data dir, or a lost instance the rescuer takes over from) to
    /// `grant`, incrementing the fencing token — only while the stored lease ran out before
    /// `expired_before` (`i64::MAX`: whatever its term). The task as it is now, or `None` when
    /// `predecessor` no longer holds it or renewed its lease meanwhile. This one
    /// compare-and-set is what keeps a late renewal and a takeover from both winning.
    async fn take_over(
        &self,
        id: &TaskId,
        predecessor: &str,
        expired_before: i64,
        grant: &LeaseGrant,
    ) -> Result<Option<Task>, StoreError>;

    /// Takes or renews the rescuer's duty for instance `holder` until `until`: `true` when
    /// `holder` has it (it held it already, or the previous holder's term ended before `now`),
    /// `false` while another instance's term runs. A term, not a session lock: an instance cut
    /// off from the database loses the duty when its term runs out, as it loses its leases.
    async fn rescuer_lock(&self, holder: &str, now: i64, until: i64) -> Result<bool, StoreError>;

    /// Takes one request of `key`'s rate — one per `interval_ms`, with bursts of
    /// `tolerance_ms / interval_ms + 1` — shared by every instance (GCRA): `Ok(None)` when it
    /// is within the rate, `Ok(Some(ms))` with the wait until the next one is when not.
    async fn take_rate(
        &self,
        key: &str,
        interval_ms: i64,
        tolerance_ms: i64,
        now: i64,
    ) -> Result<Option<i64>, StoreError>;

    /// Records `caller`'s call `key` made at `at` for the pipeline's loop guard, forgets every
    /// call made before `since` and all but the caller's latest `keep`, and returns the caller's
    /// remembered calls, oldest first (this one last). Calls are recorded one at a time, so
    /// racing calls of one caller on several instances see each other.
    async fn record_call(
        &self,
        caller: &str,
        key: &str,
        at: i64,
        since: i64,
        keep: u32,
    ) -> Result<Vec<String>, StoreError>;

    /// Whether several instances may share this store (PostgreSQL). When `false` (SQLite: the
    /// file admits one instance), every active task at start-up was this instance's.
    fn is_shared(&self) -> bool;
}

/// Durable storage of tasks, their events, artifacts and the requests waiting for an answer.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new `queued` task in one transaction: an unexpired idempotency key of the same
    /// agent returns the existing task; a full backlog refuses; otherwise the task, its key and
    /// its first status event are written together (a refused insert leaves nothing behind).
    async fn insert_task(
        &self,
        task: &NewTask,
        idempotency: Option<&IdempotencyClaim>,
        max_queued: u32,
    ) -> Result<InsertOutcome, StoreError>;

    /// The task an unexpired idempotency key of `agent` names, if any (a read; `insert_task`
    /// repeats the check race-free).
    async fn find_idempotent(
        &self,
        agent: &AgentId,
        claim: &IdempotencyClaim,
    ) -> Result<Option<Task>, StoreError>;

    /// The unfinished identical submissions that refuse `task` under its
    /// [`handoff_task::RepeatGuard`], when it has one and they reach its limit (a read;
    /// `insert_task` repeats the check race-free).
    async fn find_repeated(&self, task: &NewTask) -> Result<Option<Vec<TaskId>>, StoreError>;

    /// One task.
    async fn get_task(&self, id: &TaskId) -> Result<Option<Task>, StoreError>;

    /// Tasks matching a filter, newest first.
    async fn list_tasks(&self, filter: &TaskFilter) -> Result<TaskPage, StoreError>;

    /// Atomically picks the next queued task that fits the limits — highest priority first,
    /// FIFO within a priority, skipping agents at their own limit — and marks it `running`,
    /// incrementing its fencing token. With a `lease`, the task is owned by that instance and
    /// every later write about it through this store handle is conditional on the token (a
    /// write after another instance took the task over fails with [`StoreError::Fenced`]).
    async fn claim(
        &self,
        limits: ClaimLimits,
        at: i64,
        lease: Option<&LeaseGrant>,
    ) -> Result<Option<Task>, StoreError>;

    /// [`Self::claim`] without a lease (a single instance, tests).
    async fn claim_next(&self, limits: ClaimLimits, at: i64) -> Result<Option<Task>, StoreError> {
        self.claim(limits, at, None).await
    }

    /// Compare-and-set of a task's state plus its status event, in one transaction. Returns the
    /// updated task, or `None` when the task was no longer in `change.from`.
    async fn set_status(
        &self,
        id: &TaskId,
        change: &StatusChange,
    ) -> Result<Option<Task>, StoreError>;

    /// After a restart: puts an unfinished task (`from` must be an active state) back in the
    /// queue — the only way back to `queued`, used for tasks that opted in to re-running —
    /// clearing its start time and runner state, with a status event. `None` if it was no longer
    /// in `from`.
    async fn requeue(
        &self,
        id: &TaskId,
        from: TaskStatus,
        at: i64,
        reason: &str,
    ) -> Result<Option<Task>, StoreError>;

    /// Starts a follow-up round of a finished task (`reopen.from` must be terminal): back to
    /// the queue with its end, exit, error, runner state and lease cleared and its fence
    /// counted up, plus a status event and `reopen.events`, in one transaction. `None` if it
    /// was no longer in `from`.
    async fn reopen(&self, id: &TaskId, reopen: &Reopen) -> Result<Option<Task>, StoreError>;

    /// Records what a restarted server needs to find this task's executor again.
    async fn set_runner_state(&self, id: &TaskId, state: Option<&Value>) -> Result<(), StoreError>;

    /// Moves a task that has not started working yet to another directory (the one an agent
    /// started ahead of it already works in).
    async fn set_workdir(&self, id: &TaskId, workdir: &str) -> Result<(), StoreError>;

    /// Records that the task's final result reached its caller in the submitting call, at `at`
    /// (the first time counts; later calls change nothing).
    async fn mark_result_delivered(&self, id: &TaskId, at: i64) -> Result<(), StoreError>;

    /// Appends events (numbered after the task's last one) and returns their sequence numbers.
    async fn append_events(
        &self,
        id: &TaskId,
        at: i64,
        events: &[NewEvent],
    ) -> Result<Vec<i64>, StoreError>;

    /// A page of a task's events in order, and the total count.
    async fn events(
        &self,
        id: &TaskId,
        offset: u64,
        limit: u32,
    ) -> Result<(Vec<TaskEvent>, u64), StoreError>;

    /// The last `n` events, oldest first.
    async fn recent_events(&self, id: &TaskId, n: u32) -> Result<Vec<TaskEvent>, StoreError>;

    /// The task's newest event of `kind`, however many events of other kinds came after it.
    async fn last_event_of_kind(
        &self,
        id: &TaskId,
        kind: EventKind,
    ) -> Result<Option<TaskEvent>, StoreError>;

    /// Stores (or replaces) one artifact.
    async fn put_artifact(
        &self,
        id: &TaskId,
        at: i64,
        artifact: &NewArtifact,
    ) -> Result<(), StoreError>;

    /// A task's artifacts.
    async fn artifacts(&self, id: &TaskId) -> Result<Vec<Artifact>, StoreError>;

    /// How many tasks are in each state (states with none are omitted).
    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError>;

    /// A queued task's 1-based position in claim order, or `None` if it is not queued.
    async fn queue_position(&self, id: &TaskId) -> Result<Option<u64>, StoreError>;

    /// All tasks in the given states (recovery after a restart), oldest first.
    async fn tasks_in(&self, statuses: &[TaskStatus]) -> Result<Vec<Task>, StoreError>;

    /// Deletes terminal tasks completed before `before` (with their events, keys, artifact
    /// rows, task-scope approvals and audit records older than `before`) and returns them, so
    /// the caller can remove their directories and spilled files.
    async fn purge_terminal(&self, before: i64, limit: u32) -> Result<Vec<Task>, StoreError>;

    /// Stores a request of the task's executor that waits for an answer (replacing one with
    /// the same id).
    async fn put_input_request(&self, input: &PendingInput) -> Result<(), StoreError>;

    /// Removes one answered or withdrawn request; false if it was not stored.
    async fn delete_input_request(
        &self,
        task: &TaskId,
        request_id: &str,
    ) -> Result<bool, StoreError>;

    /// The task's requests waiting for an answer, oldest first.
    async fn input_requests(&self, task: &TaskId) -> Result<Vec<PendingInput>, StoreError>;

    /// Removes every request of the task (its run is gone).
    async fn clear_input_requests(&self, task: &TaskId) -> Result<(), StoreError>;
}

/// Standing approvals and the audit trail of permission decisions.
#[async_trait]
pub trait ApprovalStore: Send + Sync + 'static {
    /// Stores a standing approval.
    async fn insert_approval(&self, approval: &Approval) -> Result<(), StoreError>;

    /// The approvals one task may use: its own (task scope) and its agent's for `project`.
    async fn approvals_for_task(
        &self,
        agent: &AgentId,
        task: &TaskId,
        project: &str,
    ) -> Result<Vec<Approval>, StoreError>;

    /// An agent's approvals, optionally only those given in one task.
    async fn list_approvals(
        &self,
        agent: &AgentId,
        task: Option<&TaskId>,
    ) -> Result<Vec<Approval>, StoreError>;

    /// Removes one of `agent`'s approvals; returns it, or `None` if it has none by that id.
    async fn revoke_approval(
        &self,
        agent: &AgentId,
        id: &str,
    ) -> Result<Option<Approval>, StoreError>;

    /// Appends one audit record; returns its sequence number.
    async fn append_audit(&self, record: &AuditRecord) -> Result<i64, StoreError>;

    /// Audit records matching `filter`, newest first.
    async fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError>;
}

/// The Letta integration's records: one workspace block and notification per task.
#[async_trait]
pub trait WorkspaceStore: Send + Sync + 'static {
    /// Stores `record` unless its task already has one; returns the record now stored.
    async fn insert_workspace(
        &self,
        record: &WorkspaceRecord,
    ) -> Result<WorkspaceRecord, StoreError>;

    /// Replaces a task's workspace record (only that task's writer changes it).
    async fn put_workspace(&self, record: &WorkspaceRecord) -> Result<(), StoreError>;

    /// A task's workspace record.
    async fn workspace(&self, task: &TaskId) -> Result<Option<WorkspaceRecord>, StoreError>;

    /// Up to `limit` workspace records with work to do at `now` (Unix ms): a block to create,
    /// keep current or finish, a notification owed, a detach or delete due.
    async fn workspaces_due(
        &self,
        now: i64,
        limit: u32,
    ) -> Result<Vec<WorkspaceRecord>, StoreError>;

    /// When the earliest scheduled detach or delete falls due (Unix ms), if any.
    async fn next_workspace_due(&self) -> Result<Option<i64>, StoreError>;

    /// How much work the records still owe Letta.
    async fn workspace_backlog(&self) -> Result<WorkspaceBacklog, StoreError>;
}

/// One task's channel in a chat integration (its Matrix room).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelRecord {
    /// The integration (`matrix`).
    pub integration: String,
    /// The task.
    pub task_id: TaskId,
    /// The channel's id in the integration (a room id).
    pub channel_id: String,
    /// When it was created (Unix ms).
    pub created_at: i64,
    /// When it is to be closed (left, archived), once the task ended (Unix ms).
    pub close_at: Option<i64>,
    /// When it was closed (Unix ms).
    pub closed_at: Option<i64>,
}

/// What chat integrations keep across restarts: each task's channel, their read position, and
/// the incoming commands already applied (so a restart neither misses nor replays one).
#[async_trait]
pub trait ChannelStore: Send + Sync + 'static {
    /// Stores or replaces the channel record of `record.task_id`.
    async fn put_channel(&self, record: &ChannelRecord) -> Result<(), StoreError>;

    /// The channel of `task` in `integration`.
    async fn channel(
        &self,
        integration: &str,
        task: &TaskId,
    ) -> Result<Option<ChannelRecord>, StoreError>;

    /// The record of the channel `channel_id` in `integration`.
    async fn channel_by_id(
        &self,
        integration: &str,
        channel_id: &str,
    ) -> Result<Option<ChannelRecord>, StoreError>;

    /// The channels of `integration` not closed yet, oldest first.
    async fn open_channels(&self, integration: &str) -> Result<Vec<ChannelRecord>, StoreError>;

    /// The integration's stored position `name` (a sync token).
    async fn cursor(&self, integration: &str, name: &str) -> Result<Option<String>, StoreError>;

    /// Stores the integration's position `name`.
    async fn set_cursor(
        &self,
        integration: &str,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError>;

    /// Records that the command `key` was applied at `at`; `false` when it already was (the
    /// caller must not apply it again).
    async fn mark_applied(&self, integration: &str, key: &str, at: i64)
    -> Result<bool, StoreError>;
}

/// Work the Letta records still owe, by kind (one record may owe several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkspaceBacklog {
    /// Blocks still to create, keep current or finish (their writer has work).
    pub block_writes: u64,
    /// Completion notifications owed (none attempted, or one whose outcome is unknown).
    pub notifications: u64,
    /// Final blocks still to detach.
    pub detaches: u64,
    /// Detached blocks still to delete.
    pub deletes: u64,
}

/// Which audit records to read.
#[derive(Debug, Clone)]
pub struct AuditFilter {
    /// Whose; `None`: every agent's (an operator reading one task's whole trail).
    pub agent: Option<AgentId>,
    /// Only this task's.
    pub task: Option<TaskId>,
    /// Only records before this sequence number (paging).
    pub before_seq: Option<i64>,
    /// Most records returned.
    pub limit: u32,
}
