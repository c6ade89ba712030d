//! The request log: every request (except `/health`) kept in memory for assertions and,
//! optionally, appended to a JSON-lines file as it arrives.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use crate::ModelError;

/// Which API a request was made to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Anthropic,
    /// Anthropic token counting.
    CountTokens,
    /// Gemini generateContent / streamGenerateContent.
    Gemini,
    /// OpenAI embeddings.
    Embeddings,
    /// The model list.
    Models,
    /// Anything the server does not serve (answered 404).
    Unknown,
}

/// One logged request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedRequest {
    /// Arrival time, Unix milliseconds.
    pub ts_ms: u64,
    /// HTTP method.
    pub method: String,
    /// Request path, without the query.
    pub path: String,
    /// Which API was called.
    pub api: Api,
    /// Label of the matching scenario (`None` for untooled or unmatched requests).
    pub scenario: Option<String>,
    /// Assistant turns since the last real user message.
    pub turn: usize,
    /// Whether the request offered tools.
    pub tooled: bool,
    /// Whether a streamed reply was asked for.
    pub stream: bool,
    /// The working directory found in the request.
    pub cwd: Option<String>,
    /// Text of the last real user message.
    pub user_message: Option<String>,
    /// The full request body (`null` when empty or not JSON).
    pub body: Value,
}

/// The shared log.
#[derive(Debug)]
pub(crate) struct RequestLog {
    entries: Mutex<Vec<LoggedRequest>>,
    file: Option<Mutex<File>>,
    count: watch::Sender<usize>,
}

impl RequestLog {
    /// A log kept in memory and, with `path`, appended to that file.
    pub(crate) fn open(path: Option<&Path>) -> Result<RequestLog, ModelError> {
        let file = path
            .map(|path| {
                File::options()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| ModelError::OpenLog {
                        path: path.to_path_buf(),
                        source,
                    })
            })
            .transpose()?;
        Ok(RequestLog {
            entries: Mutex::new(Vec::new()),
            file: file.map(Mutex::new),
            count: watch::channel(0).0,
        })
    }

    /// Records a request. File errors are reported but never fail the request: the reply
    /// matters more to the agent under test than the log line.
    pub(crate) fn record(&self, entry: LoggedRequest) {
        // Held across the file write so the file and memory keep the same order.
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(file) = &self.file {
            let line = serde_json::to_string(&entry).unwrap_or_default();
            let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
            // One write per line keeps lines whole when read while the server runs.
            if let Err(error) = file.write_all(format!("{line}\n").as_bytes()) {
                tracing::warn!(%error, "cannot append to the request log");
            }
        }
        entries.push(entry);
        self.count.send_replace(entries.len());
    }

    /// All requests so far, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<LoggedRequest> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until at least `n` requests are logged; false on timeout.
    pub(crate) async fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let mut count = self.count.subscribe();
        tokio::time::timeout(timeout, count.wait_for(|c| *c >= n))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn entry(path: &str) -> LoggedRequest {
        LoggedRequest {
            ts_ms: 1,
            method: "POST".into(),
            path: path.into(),
            api: Api::CountTokens,
            scenario: None,
            turn: 0,
            tooled: false,
            stream: false,
            cwd: None,
            user_message: None,
            body: Value::Null,
        }
    }

    #[tokio::test]
    async fn appends_json_lines_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("requests.jsonl");
        let log = RequestLog::open(Some(&path)).unwrap();
        assert!(!log.wait_for(1, Duration::from_millis(10)).await);
        log.record(entry("/a"));
        log.record(entry("/b"));
        assert!(log.wait_for(2, Duration::from_millis(10)).await);
        let lines: Vec<LoggedRequest> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines, log.snapshot());
        let raw: Value = serde_json::from_str(
            std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(raw["api"], "count_tokens");
    }
}
