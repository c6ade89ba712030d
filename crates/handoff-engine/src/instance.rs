//! Who this process is as one instance in the store: its id (renewed when it comes back after
//! being declared lost), host, predecessor on the data dir, and the lease clock each beat
//! confirms. What the instance does in the store over time — registering, beating, draining,
//! leaving — is `membership`'s; this module is a leaf the shared handles hold.
//!
//! In memory only: the id, and the lease clock ([`crate::lease_clock`]).

use std::sync::{Arc, PoisonError, RwLock};

use handoff_store::{InstanceRecord, LeaseGrant};
use handoff_task::unix_millis_now;
use tokio_util::sync::CancellationToken;

use crate::lease_clock::LeaseClock;

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
    pub(crate) fn renew_id(&self) -> Arc<str> {
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

    /// This instance as the store records it, beating now.
    pub(crate) fn record(&self) -> InstanceRecord {
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

/// `d` in whole milliseconds, as the store keeps times (saturating).
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
