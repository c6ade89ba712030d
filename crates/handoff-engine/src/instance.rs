//! This process as one instance in the store: registered at start, a heartbeat that renews the
//! leases of the tasks it runs, marked draining when it shuts down and removed once its runs
//! settled. An instance the store no longer knows (another one declared it lost and took its
//! tasks over) kills its runs at once and registers again.

use std::sync::Arc;

use handoff_store::{InstanceRecord, LeaseGrant};
use handoff_task::unix_millis_now;
use tokio_util::sync::CancellationToken;

use crate::{EngineError, finish::StopReason, state::EngineState};

/// Who this process is in the store.
pub(crate) struct Instance {
    /// Unique per process start: `<host>-<pid>-<random>`.
    pub id: String,
    /// The machine it runs on.
    pub host: String,
    started: i64,
    /// The instance the previous process on this data dir was (dead: the data dir admits one
    /// process), whose leases this one takes over at start.
    pub predecessor: Option<String>,
    /// Ends the heartbeats (after the runs settled at shutdown).
    pub stop: CancellationToken,
}

/// The file in the data dir that names the instance the process using it is.
const ID_FILE: &str = "instance-id";

impl Instance {
    /// A fresh identity for this process, recorded in `data_dir` (the previous one becomes
    /// its predecessor).
    pub(crate) fn new(data_dir: &std::path::Path) -> Self {
        let host = host_name();
        let random = uuid::Uuid::new_v4().simple().to_string();
        let id = format!("{host}-{}-{}", std::process::id(), &random[..8]);
        let file = data_dir.join(ID_FILE);
        let predecessor = match std::fs::read_to_string(&file) {
            Ok(text) => Some(text.trim().to_owned()).filter(|p| !p.is_empty()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(error = %e, path = %file.display(), "could not read the previous instance id");
                None
            }
        };
        if let Err(e) = std::fs::write(&file, &id) {
            tracing::warn!(error = %e, path = %file.display(), "could not record the instance id");
        }
        Self {
            id,
            host,
            started: unix_millis_now(),
            predecessor,
            stop: CancellationToken::new(),
        }
    }

    /// The lease a claim made now grants.
    pub(crate) fn lease(&self, expiry: std::time::Duration) -> LeaseGrant {
        LeaseGrant {
            owner: self.id.clone(),
            until: unix_millis_now().saturating_add(millis(expiry)),
        }
    }

    fn record(&self) -> InstanceRecord {
        InstanceRecord {
            id: self.id.clone(),
            host: self.host.clone(),
            pid: std::process::id(),
            started: self.started,
            heartbeat: unix_millis_now(),
            draining: false,
        }
    }
}

fn millis(d: std::time::Duration) -> i64 {
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

/// Registers this instance.
pub(crate) async fn register(inner: &EngineState) -> Result<(), EngineError> {
    inner
        .store
        .register_instance(&inner.instance.record())
        .await?;
    tracing::info!(instance = %inner.instance.id, "registered this instance");
    Ok(())
}

/// Beats until [`Instance::stop`]; each beat renews the leases of this instance's tasks.
pub(crate) async fn heartbeats(inner: Arc<EngineState>) {
    let every = inner.config.instance.heartbeat;
    let expiry = millis(inner.config.instance.lease_expiry);
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = inner.instance.stop.cancelled() => return,
        }
        let now = unix_millis_now();
        match inner
            .store
            .heartbeat(&inner.instance.id, now, now.saturating_add(expiry))
            .await
        {
            Ok(Some(_)) => {}
            Ok(None) => {
                // Declared lost: every task it held is another instance's now.
                tracing::warn!(instance = %inner.instance.id, "this instance was declared lost; stopping its runs");
                inner.supervisors.stop_all(StopReason::Lost).await;
                if let Err(e) = register(&inner).await {
                    tracing::error!(error = %e, "could not register this instance again");
                }
            }
            Err(e) => tracing::error!(error = %e, "heartbeat failed"),
        }
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
    if let Err(e) = inner.store.set_draining(&inner.instance.id).await {
        tracing::warn!(error = %e, "could not mark this instance draining");
    }
}

/// Ends the heartbeats and removes this instance (its runs have settled).
pub(crate) async fn leave(inner: &EngineState) {
    inner.instance.stop.cancel();
    if let Err(e) = inner.store.deregister_instance(&inner.instance.id).await {
        tracing::warn!(error = %e, "could not deregister this instance");
    }
}
