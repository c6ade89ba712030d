//! Keeps the `store` component of the health report current: not ready while the task store's
//! writes fail (disk full, I/O error), with the store's own error; probed now and then, so it
//! turns ready again once writes work even when nothing else writes. Lives in memory only.

use std::{future::Future, sync::Arc, time::Duration};

use handoff_tools::builtin::ServiceStatus;
use tokio::sync::watch;

/// How often a failing store is probed.
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(2);

/// Follows the store's write faults into `status` until `stop` resolves; `healthy` is the
/// component's detail while writes work; `probe` makes one write attempt.
pub(crate) async fn follow<P, F>(
    mut faults: watch::Receiver<Option<String>>,
    probe: P,
    status: Arc<ServiceStatus>,
    healthy: String,
    probe_every: Duration,
    stop: impl Future<Output = ()>,
) where
    P: Fn() -> F,
    F: Future<Output = ()>,
{
    tokio::pin!(stop);
    loop {
        let fault = faults.borrow_and_update().clone();
        match &fault {
            None => status.set_component("store", true, healthy.as_str()),
            Some(error) => {
                status.set_component("store", false, format!("writes are failing: {error}"))
            }
        }
        tokio::select! {
            changed = faults.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = tokio::time::sleep(probe_every), if fault.is_some() => probe().await,
            () = &mut stop => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// Polls `status` until its readiness is `ready`.
    async fn until_ready_is(status: &ServiceStatus, ready: bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while status.ready() != ready {
            assert!(
                tokio::time::Instant::now() < deadline,
                "readiness never became {ready}: {:?}",
                status.report().components
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn failing_writes_make_the_store_not_ready_until_a_probe_succeeds() {
        let (tx, rx) = watch::channel(None);
        let tx = Arc::new(tx);
        let status = ServiceStatus::new();
        let probes = Arc::new(AtomicU32::new(0));
        let probe = {
            let (tx, probes) = (tx.clone(), probes.clone());
            move || {
                let (tx, probes) = (tx.clone(), probes.clone());
                async move {
                    // The second probe finds the disk has room again.
                    if probes.fetch_add(1, Ordering::SeqCst) == 1 {
                        tx.send_replace(None);
                    }
                }
            }
        };
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(follow(
            rx,
            probe,
            status.clone(),
            "SQLite".to_owned(),
            Duration::from_millis(10),
            stop.clone().cancelled_owned(),
        ));
        until_ready_is(&status, true).await;

        tx.send_replace(Some("database or disk is full".to_owned()));
        until_ready_is(&status, false).await;
        let store = status
            .report()
            .components
            .into_iter()
            .find(|c| c.name == "store")
            .unwrap();
        assert!(
            store.detail.contains("database or disk is full"),
            "{store:?}"
        );

        until_ready_is(&status, true).await;
        assert_eq!(probes.load(Ordering::SeqCst), 2);
        stop.cancel();
        task.await.unwrap();
    }
}
