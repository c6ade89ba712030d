//! Whether a Docker engine answers, found off the start-up path: a slow or hung daemon takes
//! up to the probe's limit to say so, and a server must not wait for it before it listens.
//! Until the probe answers, the container level is reported unavailable, never assumed. An
//! answer may be replaced by a later probe's (a daemon started after Handoff).

use std::{
    path::Path,
    process::Command,
    sync::{Arc, PoisonError, RwLock},
};

use serde::{Serialize, Serializer};

use crate::confine;

/// What the pending probe reports: the container level waits for it.
pub(crate) const PENDING: &str = "the Docker engine is still being probed; retry in a moment";

/// The Docker engine's version once its probe has answered (or why none answers). Clones share
/// the one answer.
#[derive(Debug, Clone, Default)]
pub struct DockerProbe(Arc<RwLock<Option<Result<String, String>>>>);

impl DockerProbe {
    /// A probe whose answer comes later, through [`DockerProbe::answer`].
    pub fn pending() -> Self {
        Self::default()
    }

    /// A probe that has answered `result`.
    pub fn answered(result: Result<String, String>) -> Self {
        let probe = Self::default();
        probe.answer(result);
        probe
    }

    /// Records the answer (the latest one stands).
    pub fn answer(&self, result: Result<String, String>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(result);
    }

    /// The engine's version, or why the container level is unavailable (also while pending).
    pub fn version(&self) -> Result<String, String> {
        match &*self.0.read().unwrap_or_else(PoisonError::into_inner) {
            Some(Ok(version)) => Ok(version.clone()),
            Some(Err(why)) => Err(why.clone()),
            None => Err(PENDING.to_owned()),
        }
    }

    /// Runs `docker version` (blocking, up to the probe's limit) and records its answer.
    pub fn run(&self, docker: &Path) {
        self.answer(version_of(docker));
    }
}

impl Serialize for DockerProbe {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.version() {
            Ok(version) => serializer.serialize_newtype_variant("docker", 0, "Ok", &version),
            Err(why) => serializer.serialize_newtype_variant("docker", 1, "Err", &why),
        }
    }
}

/// The version of the Docker engine that answers, or why none does.
fn version_of(docker: &Path) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_until_answered_and_the_latest_answer_stands() {
        let probe = DockerProbe::pending();
        let shared = probe.clone();
        assert_eq!(probe.version(), Err(PENDING.to_owned()));
        assert_eq!(
            serde_json::to_value(&probe).unwrap(),
            serde_json::json!({"Err": PENDING})
        );
        shared.answer(Err("no Docker engine answers".into()));
        shared.answer(Ok("27.1".into()));
        assert_eq!(probe.version(), Ok("27.1".to_owned()));
        assert_eq!(
            serde_json::to_value(&probe).unwrap(),
            serde_json::json!({"Ok": "27.1"})
        );
    }

    #[test]
    fn a_missing_client_is_an_answer() {
        let probe = DockerProbe::pending();
        probe.run(Path::new("/nonexistent/docker"));
        let why = probe.version().unwrap_err();
        assert!(
            why.contains("/nonexistent/docker") && why != PENDING,
            "{why}"
        );
    }
}
