//! Following an agent process: its stdout lines that are JSON go to the driver, its stderr to
//! the log (the last lines explain a failure), anything else (other stdout, Handoff's own
//! notes) is passed on, and its end is the driver's last word.

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::{
    RunEvent, RunOutcome,
    agent_stderr::StderrTail,
    json_lines::{Said, sort},
};

/// What one protocol does with what its agent says.
#[async_trait]
pub(crate) trait Driver: Send + Sync + Sized + 'static {
    /// The agent's name in messages (a vanished process is "{agent}'s process vanished").
    fn agent(&self) -> &str;

    /// Where the run's events go.
    fn events(&self) -> &mpsc::Sender<RunEvent>;

    /// One JSON-RPC message from the agent.
    async fn message(&mut self, value: &Value);

    /// The process ended: the run's outcome goes out.
    async fn finish(self, outcome: RunOutcome);

    /// Passes `event` on (a run nobody reads any more drops it).
    async fn emit(&self, event: RunEvent) {
        let _ = self.events().send(event).await;
    }
}

/// Feeds `driver` the process's events until it ends.
pub(crate) async fn follow<D: Driver>(mut driver: D, mut inner: mpsc::Receiver<RunEvent>) {
    let mut stderr = StderrTail::new(driver.agent());
    loop {
        let said = sort(inner.recv().await, driver.agent());
        match said {
            Said::Json(value) => driver.message(&value).await,
            Said::Other(event) => {
                if let Some(event) = stderr.take(event) {
                    driver.emit(event).await;
                }
            }
            Said::Ended(outcome) => {
                if let Some(note) = stderr.note_for(&outcome) {
                    driver.emit(note).await;
                }
                return driver.finish(outcome).await;
            }
        }
    }
}
