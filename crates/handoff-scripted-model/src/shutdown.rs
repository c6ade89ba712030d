//! The server-wide shutdown signal. Hanging streams and delays wait on it, so a graceful
//! shutdown never waits on a reply that was scripted never to finish.

use tokio::sync::watch;

/// Sends the shutdown signal; dropping it signals too.
#[derive(Debug)]
pub(crate) struct Trigger(watch::Sender<bool>);

/// Waits for the shutdown signal.
#[derive(Debug, Clone)]
pub(crate) struct Shutdown(watch::Receiver<bool>);

/// A connected trigger and signal.
pub(crate) fn channel() -> (Trigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (Trigger(tx), Shutdown(rx))
}

impl Trigger {
    /// Signals shutdown to every waiter.
    pub(crate) fn fire(&self) {
        self.0.send_replace(true);
    }
}

impl Shutdown {
    /// Resolves once shutdown is signalled or the trigger is gone.
    pub(crate) async fn wait(mut self) {
        // An error means the trigger was dropped, which is a shutdown too.
        let _ = self.0.wait_for(|fired| *fired).await;
    }
}
