//! This process as one instance in the store: registered at start, a heartbeat that renews the
//! leases of the tasks it runs, marked draining when it shuts down and removed once its runs
//! settled. An instance the store no longer knows (another one declared it lost and takes its
//! tasks over) kills its runs at once — without writing anything about them: the new owner
//! decides their state — and comes back as a new instance, under a new id, so that its old
//! leases are never renewed again.
//!
//! In memory only: the id, and the lease clock ([`crate::fence`]) each beat confirms.

use std::sync::{Arc, PoisonError, RwLock};

use handoff_store::{InstanceRecord, LeaseGrant};
use handoff_task::unix_millis_now;
use tokio_util::sync::CancellationToken;

use crate::{EngineError, fence::LeaseClock, finish::StopReason, state::EngineState};

/// Who this process is in the store.
pub(crate) struct Instance {
    /// Unique per process start and per comeback after being declared lost:
    /// `<host>-<pid>-<random>`.
    id: RwLock<Arc<str>>,
    /// The machine it runs on.
    pub host: String,
    started: i64,
    /// The instance the previous process on this data dir was (dead: the data dir admits one
    /// process), whose leases this one takes over at start.
    pub predecessor: Option<String>,
    /// Ends the heartbeats (after the runs settled at shutdown).
    pub stop: CancellationToken,
    /// Until when this instance's leases are known to hold, and whether its runs are frozen.
    pub clock: LeaseClock,
    /// Where the id is recorded for the next process on this data dir.
    id_file: std::path::PathBuf,
    /// The instances sharing the store that are not draining, as of the latest beat (the
    /// scheduler's share of the queue).
    pub live: std::sync::atomic::AtomicUsize,
}

/// The file in the data dir that names the instance the process using it is.
const ID_FILE: &str = "instance-id";

impl Instance {
    /// A fresh identity for this process, recorded in `data_dir` (the previous one becomes
    /// its predecessor).
    pub(crate) fn new(data_dir: &std::path::Path) -> Self {
        let host = host_name();
        let id = fresh_id(&host);
        let file = data_dir.join(ID_FILE);
        let predecessor = match std::fs::read_to_string(&file) {
            Ok(text) => Some(text.trim().to_owned()).filter(|p| !p.is_empty()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(error = %e, path = %file.display(), "could not read the previous instance id");
                None
            }
        };
        record_id(&file, &id);
        Self {
            id: RwLock::new(id.into()),
            host,
            started: unix_millis_now(),
            predecessor,
            stop: CancellationToken::new(),
            clock: LeaseClock::default(),
            id_file: file,
            live: std::sync::atomic::AtomicUsize::new(1),
        }
    }

    /// This instance's id now (it changes when the instance comes back after being declared
    /// lost).
    pub(crate) fn id(&self) -> Arc<str> {
        self.id
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Takes a new id: the instance comes back as a new one after being declared lost.
    fn renew_id(&self) -> Arc<str> {
        let id: Arc<str> = fresh_id(&self.host).into();
        record_id(&self.id_file, &id);
        *self.id.write().unwrap_or_else(PoisonError::into_inner) = id.clone();
        id
    }

    /// The lease a claim made now grants.
    pub(crate) fn lease(&self, expiry: std::time::Duration) -> LeaseGrant {
        LeaseGrant {
            owner: self.id().to_string(),
            until: unix_millis_now().saturating_add(millis(expiry)),
        }
    }

    fn record(&self) -> InstanceRecord {
        InstanceRecord {
            id: self.id().to_string(),
            host: self.host.clone(),
            pid: std::process::id(),
            started: self.started,
            heartbeat: unix_millis_now(),
            draining: false,
        }
    }
}

/// A new instance id: `<host>-<pid>-<random>`.
fn fresh_id(host: &str) -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &random[..8])
}

/// Records `id` in the data dir, so the next process there knows its predecessor.
fn record_id(file: &std::path::Path, id: &str) {
    if let Err(e) = std::fs::write(file, id) {
        tracing::warn!(error = %e, path = %file.display(), "could not record the instance id");
    }
}

pub(crate) fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The machine's name as the kernel knows it (for operators reading `instances`).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Registers this instance; its leases are known to hold for a lease expiry from now.
pub(crate) async fn register(inner: &EngineState) -> Result<(), EngineError> {
    let at = unix_millis_now();
    inner
        .store
        .register_instance(&inner.instance.record())
        .await?;
    let until = at.saturating_add(millis(inner.config.instance.lease_expiry));
    crate::fence::confirmed(inner, until).await;
    tracing::info!(instance = %inner.instance.id(), "registered this instance");
    Ok(())
}

/// Beats until [`Instance::stop`]; each beat renews the leases of this instance's tasks and,
/// once the store confirmed it, moves the lease clock on (thawing runs frozen meanwhile).
pub(crate) async fn heartbeats(inner: Arc<EngineState>) {
    let every = inner.config.instance.heartbeat;
    let expiry = millis(inner.config.instance.lease_expiry);
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = inner.instance.stop.cancelled() => return,
        }
        // The lease runs from before the write is sent: whenever the store applies it, the
        // lease it grants ends no later than this.
        let now = unix_millis_now();
        let until = now.saturating_add(expiry);
        match inner
            .store
            .heartbeat(&inner.instance.id(), now, until)
            .await
        {
            Ok(Some(_)) => {
                crate::fence::confirmed(&inner, until).await;
                count_live(&inner).await;
            }
            Ok(None) => declared_lost(&inner).await,
            Err(e) => {
                inner.instance.clock.unreachable();
                tracing::error!(error = %e, "heartbeat failed");
            }
        }
    }
}

/// Counts the instances sharing the store that take work (a shared store only).
async fn count_live(inner: &EngineState) {
    if !inner.store.is_shared() {
        return;
    }
    if let Ok(instances) = inner.store.instances().await {
        let live = instances.iter().filter(|i| !i.instance.draining).count();
        inner
            .instance
            .live
            .store(live.max(1), std::sync::atomic::Ordering::Relaxed);
    }
}

/// Another instance declared this one lost and takes its tasks over: every run is killed at
/// once and nothing is written about them; the instance comes back under a new id, so its
/// old leases stay expired for the rescuer.
async fn declared_lost(inner: &EngineState) {
    let old = inner.instance.id();
    tracing::warn!(instance = %old, "this instance was declared lost; killing its runs");
    inner.supervisors.stop_all(StopReason::Lost).await;
    let new = inner.instance.renew_id();
    tracing::info!(old = %old, new = %new, "coming back as a new instance");
    if let Err(e) = register(inner).await {
        tracing::error!(error = %e, "could not register this instance again");
    }
}

/// Removes the predecessor's registration once its tasks were taken over (it is dead; the
/// rescuer would otherwise count it until its heartbeat expired).
pub(crate) async fn forget_predecessor(inner: &EngineState) {
    let Some(predecessor) = &inner.instance.predecessor else {
        return;
    };
    if let Err(e) = inner.store.deregister_instance(predecessor).await {
        tracing::warn!(error = %e, "could not deregister the previous instance");
    }
}

/// Marks this instance draining: it claims nothing more.
pub(crate) async fn drain(inner: &EngineState) {
    if let Err(e) = inner.store.set_draining(&inner.instance.id()).await {
        tracing::warn!(error = %e, "could not mark this instance draining");
    }
}

/// Ends the heartbeats and removes this instance (its runs have settled).
pub(crate) async fn leave(inner: &EngineState) {
    inner.instance.stop.cancel();
    if let Err(e) = inner.store.deregister_instance(&inner.instance.id()).await {
        tracing::warn!(error = %e, "could not deregister this instance");
    }
}
