//! Isolation as the process executors see it: the host's isolator plus one executor's settings.

use std::{ffi::OsString, path::Path, sync::Arc};

use handoff_isolation::{IsolationConfig, Isolator, Prepared};

use crate::RunnerError;

/// How one executor's processes are confined.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The host's isolator (capabilities found at start-up).
    pub isolator: Arc<Isolator>,
    /// This executor's level, network, limits and environment policy.
    pub config: IsolationConfig,
}

impl Isolation {
    /// The command that runs `argv` confined, in the cgroup (or container) named `name` (a
    /// run's own); refused when the host cannot provide the configured level.
    pub(crate) fn prepare(
        &self,
        name: &str,
        workdir: &Path,
        argv: &[String],
        env: &[(String, String)],
    ) -> Result<Prepared, RunnerError> {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let env: Vec<(OsString, OsString)> = env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        self.isolator
            .prepare(
                &self.config,
                name,
                workdir,
                &argv,
                std::env::vars_os(),
                &env,
            )
            .map_err(|e| RunnerError::Isolation(e.to_string()))
    }
}
