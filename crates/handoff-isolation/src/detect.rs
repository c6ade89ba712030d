//! What this host can provide, found once at start-up and reported by `health` and
//! `handoff doctor`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::{IsolationLevel, cgroups::CgroupSupport, confine, docker_probe::DockerProbe};

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
    /// The Docker engine's version, when one answers (perhaps still being probed).
    pub docker: DockerProbe,
}

impl HostCapabilities {
    /// Probes the host (runs `bwrap` and `docker` once each; well under a second unless the
    /// Docker daemon is slow).
    pub fn detect(bwrap: &Path, docker: &Path) -> Self {
        // Each probe spawns programs and waits for them (`docker version` alone takes tens of
        // ms with no daemon): side by side, this waits for the slower one only.
        let probe = DockerProbe::pending();
        std::thread::scope(|scope| {
            scope.spawn(|| probe.run(docker));
            Self::detect_deferring_docker(bwrap, probe.clone())
        })
    }

    /// Probes everything but Docker, whose answer `docker` delivers when it comes (see
    /// [`DockerProbe`]): what a server does before it listens.
    pub fn detect_deferring_docker(bwrap: &Path, docker: DockerProbe) -> Self {
        Self {
            bwrap: confine::bwrap_works(bwrap).map(|version| (bwrap.to_owned(), version)),
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
            IsolationLevel::Container => {
                self.docker.version().map(|v| format!("Docker engine {v}"))
            }
        }
    }
}
