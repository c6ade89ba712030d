//! A PostgreSQL cluster of one test's own, for faults the shared test server must not suffer:
//! stopped and started again on the same port and data, as an operator's restart or a crash
//! would. Brought up by `scripts/postgres/up.sh` with a state directory of its own, and down
//! (stopped, data deleted) when dropped.

use std::{collections::HashMap, path::PathBuf, process::Command};

/// The repository's root (the scripts live there).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One throw-away cluster.
pub(super) struct OwnCluster {
    state: tempfile::TempDir,
    env: HashMap<String, String>,
}

impl OwnCluster {
    /// Starts a new cluster (a few seconds: `initdb` and a start).
    pub(super) fn up() -> Self {
        let state = tempfile::tempdir().unwrap();
        let out = Command::new(repo().join("scripts/postgres/up.sh"))
            .env("PG_STATE_DIR", state.path())
            .output()
            .expect("scripts/postgres/up.sh");
        assert!(
            out.status.success(),
            "up.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(state.path().join("run/env")).unwrap();
        let env = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Self { state, env }
    }

    fn get(&self, key: &str) -> &str {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("{key} in up.sh's env"))
    }

    /// The cluster's URL (it keeps its port across a restart).
    pub(super) fn url(&self) -> String {
        self.get("HANDOFF_TEST_DATABASE_URL").to_owned()
    }

    /// `pg_ctl` as the user the cluster runs as (PostgreSQL refuses to run as root).
    fn pg_ctl(&self, args: &[&str]) {
        let pg_ctl = format!("{}/pg_ctl", self.get("PG_BIN"));
        // /proc/self belongs to the process's effective user.
        let root =
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
        let mut command = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--", &pg_ctl]);
            c
        } else {
            Command::new(&pg_ctl)
        };
        let out = command
            .args(["-D", self.get("PG_DATA"), "-w", "-t", "60"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops the server at once, as a crash would (`immediate`: every session is cut).
    pub(super) fn stop(&self) {
        self.pg_ctl(&["-m", "immediate", "stop"]);
    }

    /// Starts the server again on the same port and data.
    pub(super) fn start(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=300",
            self.get("PG_PORT"),
            self.get("PG_TMP")
        );
        let log = format!("{}/postgres.log", self.get("PG_TMP"));
        self.pg_ctl(&["-l", &log, "-o", &options, "start"]);
        // down.sh stops the postmaster by the pid it recorded: record the new one.
        let pidfile = format!("{}/postmaster.pid", self.get("PG_DATA"));
        let pid = std::fs::read_to_string(pidfile).unwrap();
        let pid = pid.lines().next().unwrap().trim().to_owned();
        let envfile = self.state.path().join("run/env");
        let text = std::fs::read_to_string(&envfile).unwrap();
        let text: Vec<String> = text
            .lines()
            .map(|l| {
                if l.starts_with("PG_PID=") {
                    format!("PG_PID={pid}")
                } else {
                    l.to_owned()
                }
            })
            .collect();
        std::fs::write(envfile, text.join("\n") + "\n").unwrap();
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("scripts/postgres/down.sh"))
            .env("PG_STATE_DIR", self.state.path())
            .output();
    }
}
