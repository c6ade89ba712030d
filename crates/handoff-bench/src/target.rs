//! The servers under test, each in its own process so its CPU time can be read alone.

use std::{path::Path, process::Stdio, time::Duration};

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::BenchError;

/// A server process and where it listens.
pub(crate) struct Target {
    child: Child,
    /// The MCP endpoint.
    pub url: String,
    /// Its pid, for `/proc` samples.
    pub pid: u32,
    _dir: tempfile::TempDir,
}

impl Target {
    /// `handoff serve` on a free port, in a fresh data dir, with `env` added.
    pub(crate) async fn handoff(exe: &Path, env: &[(&str, String)]) -> Result<Self, BenchError> {
        let dir = tempfile::tempdir().map_err(|source| BenchError::Io {
            context: "creating a data dir",
            source,
        })?;
        let mut command = Command::new(exe);
        command
            .args(["serve", "--port", "0", "--log-format", "json"])
            // The address line is info; per-call audit lines would only add noise to the load.
            .env(
                "RUST_LOG",
                "warn,handoff=info,handoff::audit=warn,rmcp=warn",
            )
            .current_dir(dir.path())
            .env("HANDOFF_DATA_DIR", dir.path().join("data"))
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
        Self::spawn("handoff serve", command, "handoff listening", dir).await
    }

    /// The floor server (`handoff bench-floor`), answering with `answers` (a serialised
    /// answers file, see [`crate::serve_floor`]).
    pub(crate) async fn floor(exe: &Path, answers: &[u8]) -> Result<Self, BenchError> {
        let dir = tempfile::tempdir().map_err(|source| BenchError::Io {
            context: "creating a temp dir",
            source,
        })?;
        let file = dir.path().join("answers.json");
        std::fs::write(&file, answers).map_err(|source| BenchError::Io {
            context: "writing the floor's answers",
            source,
        })?;
        let mut command = Command::new(exe);
        command
            .arg("bench-floor")
            .arg("--answers")
            .arg(&file)
            .current_dir(dir.path());
        Self::spawn("the floor server", command, "floor listening", dir).await
    }

    async fn spawn(
        what: &'static str,
        mut command: Command,
        marker: &str,
        dir: tempfile::TempDir,
    ) -> Result<Self, BenchError> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BenchError::Start {
                what,
                message: e.to_string(),
            })?;
        let pid = child.id().unwrap_or(0);
        let stderr = child.stderr.take().ok_or_else(|| BenchError::Start {
            what,
            message: "no stderr pipe".to_owned(),
        })?;
        let mut lines = BufReader::new(stderr).lines();
        let found = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains(marker)
                    && let Some(at) = line.find("http://127.0.0.1:")
                {
                    let url: String = line[at..]
                        .chars()
                        .take_while(|c| *c != '"' && !c.is_whitespace())
                        .collect();
                    return Some(url);
                }
            }
            None
        })
        .await;
        // Keep draining so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        match found {
            Ok(Some(url)) => Ok(Self {
                child,
                url,
                pid,
                _dir: dir,
            }),
            _ => {
                let _ = child.kill().await;
                Err(BenchError::Start {
                    what,
                    message: "it did not print its address within 30 s".to_owned(),
                })
            }
        }
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub(crate) async fn kill_now(mut self) {
        let _ = self.child.kill().await;
    }

    /// Stops the server.
    pub(crate) async fn stop(mut self) {
        // SIGTERM first: Handoff then stops what it started itself (a managed OpenCode server).
        // Pid 0 would signal our own process group.
        if let Ok(pid) = i32::try_from(self.pid)
            && pid > 0
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        if tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
