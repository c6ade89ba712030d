//! Keeps the `store` component of the health report current, in memory only (nothing of it is
//! stored): not ready while the task store is unreachable — a liveness probe every
//! [`PROBE_EVERY`] (PostgreSQL: `SELECT 1`; SQLite: a small read), failed or unanswered within
//! [`PROBE_TIMEOUT`] — or while its writes fail (disk full, I/O error), with the store's own
//! error. While writes fail and the store answers, a small real write is tried every
//! [`WRITE_PROBE_EVERY`], so it turns ready again once writes work even when nothing else
//! writes. `/ready` thus answers 503 within about `PROBE_EVERY` + the probe's limit of the
//! store becoming unreachable, and 200 again within `PROBE_EVERY` of it answering.

use std::{future::Future, sync::Arc, time::Duration};

use handoff_tools::builtin::ServiceStatus;
use tokio::{
    sync::watch,
    time::{Instant, MissedTickBehavior},
};

/// How often the store's liveness is probed.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(500);

/// How long a liveness probe may take before the store counts as unreachable. Above
/// PostgreSQL's own probe limit (1 s), so that one ends first and is recorded by the store.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(1200);

/// How often a store whose writes fail is probed with a write (and how long that may take).
pub(crate) const WRITE_PROBE_EVERY: Duration = Duration::from_secs(2);

/// The probes of a task store.
pub(crate) trait StoreProbe {
    /// `Ok` when the store answers, else why not.
    fn reachable(&self) -> impl Future<Output = Result<(), String>> + Send;
    /// One small real write; its outcome reaches the store's write-fault watch.
    fn write(&self) -> impl Future<Output = ()> + Send;
}

/// How often and how long [`follow`] probes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cadence {
    /// Between liveness probes.
    pub(crate) every: Duration,
    /// The most a liveness probe may take.
    pub(crate) timeout: Duration,
    /// Between write probes while writes fail.
    pub(crate) write_every: Duration,
}

impl Cadence {
    /// The server's cadence.
    pub(crate) const SERVER: Cadence = Cadence {
        every: PROBE_EVERY,
        timeout: PROBE_TIMEOUT,
        write_every: WRITE_PROBE_EVERY,
    };
}

/// Follows the store's liveness and write faults into `status` until `stop` resolves; `healthy`
/// is the component's detail while the store answers and its writes work.
pub(crate) async fn follow(
    mut faults: watch::Receiver<Option<String>>,
    probe: impl StoreProbe,
    status: Arc<ServiceStatus>,
    healthy: String,
    cadence: Cadence,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut tick = tokio::time::interval(cadence.every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut unreachable = None;
    let mut wrote: Option<Instant> = None;
    loop {
        let fault = faults.borrow_and_update().clone();
        show(&status, &healthy, unreachable.as_deref(), fault.as_deref());
        tokio::select! {
            changed = faults.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = tick.tick() => {
                unreachable = reached(&probe, cadence.timeout).await;
                let due = wrote.is_none_or(|at| at.elapsed() >= cadence.write_every);
                if unreachable.is_none() && faults.borrow().is_some() && due {
                    wrote = Some(Instant::now());
                    // A write that does not end in time is tried again when next due.
                    let _ = tokio::time::timeout(cadence.write_every, probe.write()).await;
                }
            }
            () = &mut stop => return,
        }
    }
}

/// One liveness probe: `None` when the store answered within `timeout`, else why not.
async fn reached(probe: &impl StoreProbe, timeout: Duration) -> Option<String> {
    match tokio::time::timeout(timeout, probe.reachable()).await {
        Ok(Ok(())) => None,
        Ok(Err(cause)) => Some(cause),
        Err(_) => Some(format!("no answer within {} ms", timeout.as_millis())),
    }
}

/// Sets the `store` component: unreachable first, then failing writes, else `healthy`.
fn show(status: &ServiceStatus, healthy: &str, unreachable: Option<&str>, fault: Option<&str>) {
    match (unreachable, fault) {
        (Some(cause), _) => status.set_component("store", false, format!("unreachable: {cause}")),
        (None, Some(error)) => {
            status.set_component("store", false, format!("writes are failing: {error}"))
        }
        (None, None) => status.set_component("store", true, healthy),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Mutex,
        atomic::{AtomicBool, AtomicU32, Ordering},
    };

    use tokio_util::sync::CancellationToken;

    use super::*;

    /// A store whose probes the test steers.
    struct Fake {
        /// What the liveness probe answers: `None`, the store answers; else the cause.
        down: Mutex<Option<String>>,
        /// The liveness probe never answers (a server cut off without a word).
        hang: AtomicBool,
        /// Liveness probes answered.
        probes: AtomicU32,
        /// Write probes made.
        writes: AtomicU32,
        /// The store's write-fault watch, which the `heal_at`-th write probe clears.
        faults: watch::Sender<Option<String>>,
        heal_at: u32,
    }

    impl Fake {
        fn new(heal_at: u32) -> Arc<Self> {
            Arc::new(Self {
                down: Mutex::new(None),
                hang: AtomicBool::new(false),
                probes: AtomicU32::new(0),
                writes: AtomicU32::new(0),
                faults: watch::channel(None).0,
                heal_at,
            })
        }

        fn set_down(&self, cause: Option<&str>) {
            *self.down.lock().unwrap() = cause.map(str::to_owned);
        }

        /// Follows this store into a fresh status until `stop` is cancelled.
        fn followed(
            self: &Arc<Self>,
            cadence: Cadence,
        ) -> (
            Arc<ServiceStatus>,
            CancellationToken,
            tokio::task::JoinHandle<()>,
        ) {
            let status = ServiceStatus::new();
            let stop = CancellationToken::new();
            let task = tokio::spawn(follow(
                self.faults.subscribe(),
                self.clone(),
                status.clone(),
                "SQLite".to_owned(),
                cadence,
                stop.clone().cancelled_owned(),
            ));
            (status, stop, task)
        }
    }

    impl StoreProbe for Arc<Fake> {
        async fn reachable(&self) -> Result<(), String> {
            if self.hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            self.probes.fetch_add(1, Ordering::SeqCst);
            match self.down.lock().unwrap().clone() {
                Some(cause) => Err(cause),
                None => Ok(()),
            }
        }

        async fn write(&self) {
            if self.writes.fetch_add(1, Ordering::SeqCst) + 1 == self.heal_at {
                self.faults.send_replace(None);
            }
        }
    }

    /// Probing every 10 ms.
    const FAST: Cadence = Cadence {
        every: Duration::from_millis(10),
        timeout: Duration::from_millis(100),
        write_every: Duration::from_millis(10),
    };

    /// Looks at `probe` every 5 ms until it yields `Ok`; after a minute (a safety net: the
    /// probes follow each other every 10 ms, or at the server's cadence) panics with `what`
    /// and the last observation.
    async fn until<O: std::fmt::Debug>(what: &str, probe: impl Fn() -> Result<(), O>) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while let Err(seen) = probe() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "never: {what}; last seen: {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits until the readiness of `status` is `ready`.
    async fn until_ready_is(status: &ServiceStatus, ready: bool) {
        let what = format!("readiness {ready}");
        until(&what, || {
            if status.ready() == ready {
                Ok(())
            } else {
                Err(status.report().components)
            }
        })
        .await;
    }

    fn store_detail(status: &ServiceStatus) -> String {
        let store = status
            .report()
            .components
            .into_iter()
            .find(|c| c.name == "store");
        store.map(|c| c.detail).unwrap_or_default()
    }

    #[tokio::test]
    async fn failing_writes_make_the_store_not_ready_until_a_write_probe_succeeds() {
        // The second write probe finds the disk has room again.
        let fake = Fake::new(2);
        let (status, stop, task) = fake.followed(FAST);
        until_ready_is(&status, true).await;

        fake.faults
            .send_replace(Some("database or disk is full".to_owned()));
        until_ready_is(&status, false).await;
        let detail = store_detail(&status);
        assert!(
            detail.contains("writes are failing: database or disk is full"),
            "{detail}"
        );

        until_ready_is(&status, true).await;
        assert_eq!(fake.writes.load(Ordering::SeqCst), 2);
        stop.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn an_unreachable_store_is_not_ready_until_it_answers_again() {
        // The first write probe succeeds.
        let fake = Fake::new(1);
        let (status, stop, task) = fake.followed(FAST);
        until_ready_is(&status, true).await;

        // Nothing writes: the probe alone notices.
        fake.set_down(Some("Connection refused (os error 111)"));
        until_ready_is(&status, false).await;
        let detail = store_detail(&status);
        assert!(
            detail.contains("unreachable: Connection refused"),
            "{detail}"
        );
        // A write failed meanwhile: no write is tried while the store does not answer.
        fake.faults.send_replace(Some("pool timed out".to_owned()));
        let probed = fake.probes.load(Ordering::SeqCst);
        until("three more probes", || {
            let seen = fake.probes.load(Ordering::SeqCst);
            if seen >= probed + 3 {
                Ok(())
            } else {
                Err(seen)
            }
        })
        .await;
        assert_eq!(fake.writes.load(Ordering::SeqCst), 0);
        assert!(!status.ready());

        // It answers again; the write probe then finds writes work too.
        fake.set_down(None);
        until_ready_is(&status, true).await;
        assert_eq!(fake.writes.load(Ordering::SeqCst), 1);
        stop.cancel();
        task.await.unwrap();
    }

    /// The server's own cadence against a store that stops answering without a word (a
    /// PostgreSQL cut off): not ready within 2 s, and ready again once it answers.
    #[tokio::test]
    async fn a_store_that_stops_answering_is_not_ready_within_two_seconds() {
        let fake = Fake::new(u32::MAX);
        let (status, stop, task) = fake.followed(Cadence::SERVER);
        until_ready_is(&status, true).await;

        let cut = tokio::time::Instant::now();
        fake.hang.store(true, Ordering::SeqCst);
        until_ready_is(&status, false).await;
        let took = cut.elapsed();
        assert!(took < Duration::from_secs(2), "took {took:?}");
        let detail = store_detail(&status);
        assert!(
            detail.contains("unreachable: no answer within 1200 ms"),
            "{detail}"
        );

        fake.hang.store(false, Ordering::SeqCst);
        until_ready_is(&status, true).await;
        stop.cancel();
        task.await.unwrap();
    }
}
