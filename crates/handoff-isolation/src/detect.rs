//! What this host can provide, found once at start-up and reported by `health` and
//! `handoff doctor`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde::Serialize;

use crate::{IsolationLevel, cgroups::CgroupSupport, confine};

/// The isolation mechanisms found on this host.
#[derive(Debug, Clone, Serialize)]
pub struct HostCapabilities {
    /// The bubblewrap binary and its version, when it can build a sandbox here.
    pub bwrap: Result<(PathBuf, String), String>,
    /// Whether the kernel enforces Landlock.
    pub landlock: bool,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// The cgroup hierarchies usable for limits, freezing and killing.
    pub cgroups: CgroupSupport,
    /// The Docker engine's version, when one answers.
    pub docker: Result<String, String>,
}

impl HostCapabilities {
    /// Probes the host (runs `bwrap` and `docker` once each; well under a second).
    pub fn detect(bwrap: &Path, docker: &Path) -> Self {
        // Each probe spawns programs and waits for them (`docker version` alone takes tens of
        // ms with no daemon): side by side, start-up waits for the slower one only.
        let (bwrap, docker) = std::thread::scope(|scope| {
            let docker = scope.spawn(|| docker_version(docker));
            let bwrap = confine::bwrap_works(bwrap).map(|version| (bwrap.to_owned(), version));
            let docker = docker
                .join()
                .unwrap_or_else(|_| Err("the docker probe panicked".to_owned()));
            (bwrap, docker)
        });
        Self {
            bwrap,
            landlock: confine::landlock_available(),
            seccomp: confine::seccomp_available(),
            cgroups: CgroupSupport::detect(),
            docker,
        }
    }

    /// Whether `level` can be provided, and how (or why not).
    pub fn level(&self, level: IsolationLevel) -> Result<String, String> {
        match level {
            IsolationLevel::None => Ok("own process group".to_owned()),
            IsolationLevel::Process => Ok(format!(
                "own session, parent-death signal, scrubbed environment, rlimits; cgroups: {}",
                self.cgroups.summary()
            )),
            IsolationLevel::Sandbox => match (&self.bwrap, self.landlock, self.seccomp) {
                (Ok((_, version)), landlock, seccomp) => Ok(format!(
                    "{version}{}{}",
                    if landlock { " + Landlock" } else { "" },
                    if seccomp { " + seccomp" } else { "" }
                )),
                (Err(bwrap), true, true) => Ok(format!(
                    "Landlock + seccomp only (bubblewrap unusable: {bwrap})"
                )),
                (Err(bwrap), _, _) => Err(format!(
                    "bubblewrap unusable ({bwrap}) and no Landlock + seccomp to fall back on"
                )),
            },
            IsolationLevel::Container => self
                .docker
                .as_ref()
                .map(|v| format!("Docker engine {v}"))
                .map_err(Clone::clone),
        }
    }
}

/// The version of the Docker engine that answers, or why none does.
fn docker_version(docker: &Path) -> Result<String, String> {
    let output = confine::output_within(Command::new(docker).args([
        "version",
        "--format",
        "{{.Server.Version}}",
    ]))
    .map_err(|e| format!("{}: {e}", docker.display()))?;
    let out = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if output.status.success() && !out.is_empty() {
        Ok(out)
    } else {
        let err = String::from_utf8_lossy(&output.stderr);
        Err(format!(
            "no Docker engine answers: {}",
            err.lines().next().unwrap_or("no answer").trim()
        ))
    }
}
