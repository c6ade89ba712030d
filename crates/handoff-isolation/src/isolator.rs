//! Turns "run this argv as run X at level L" into the command Handoff actually spawns: the
//! launcher (or `docker run`) in front, the scrubbed environment, and the run's cgroup.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    sync::Arc,
};

use crate::{
    EnvPolicy, HostCapabilities, IsolationError, IsolationLevel, Limits, NetworkMode,
    cgroups::TaskCgroup,
    container::{self, ContainerSpec},
    launch::{self, BwrapPlan, LaunchSpec, Rlimits, Stage},
};

/// How one executor's processes are isolated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationConfig {
    /// The level.
    pub level: IsolationLevel,
    /// Network inside `sandbox` and `container`.
    pub network: NetworkMode,
    /// Memory, CPU and pids per task.
    pub limits: Limits,
    /// Inherited variables that pass (`process` and up).
    pub env: EnvPolicy,
    /// rlimits (`process` and up).
    pub rlimits: Rlimits,
    /// Covered by an empty tmpfs inside the sandbox (Handoff's data dir, the workspace root).
    pub hide: Vec<PathBuf>,
    /// Writable besides the task directory inside the sandbox (e.g. an agent's state dir).
    pub writable: Vec<PathBuf>,
    /// Image for `container`.
    pub image: Option<String>,
}

impl Default for IsolationConfig {
    fn default() -> Self {
        Self {
            level: IsolationLevel::Process,
            network: NetworkMode::Shared,
            limits: Limits::default(),
            env: EnvPolicy::default(),
            rlimits: Rlimits::DEFAULT,
            hide: Vec::new(),
            writable: Vec::new(),
            image: None,
        }
    }
}

/// The command to spawn for one run.
#[derive(Debug)]
pub struct Prepared {
    /// Program to execute.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Start from an empty environment (then `env`); otherwise `env` is added to the inherited one.
    pub env_clear: bool,
    /// Variables to set.
    pub env: Vec<(OsString, OsString)>,
    /// The launcher makes itself a session leader; the spawner must not set a process group.
    pub own_session: bool,
    /// The run's cgroups (limits, freeze, kill), removed by the caller when the run is over.
    pub cgroup: Option<TaskCgroup>,
    /// The container's name, for `docker pause|unpause|kill`.
    pub container: Option<String>,
}

/// Prepares isolated launches on this host.
#[derive(Debug, Clone)]
pub struct Isolator {
    launcher: Vec<String>,
    docker: PathBuf,
    host: Arc<HostCapabilities>,
}

impl Isolator {
    /// An isolator whose launcher is `launcher` (program and leading arguments).
    pub fn new(launcher: Vec<String>, docker: PathBuf, host: Arc<HostCapabilities>) -> Self {
        Self {
            launcher,
            docker,
            host,
        }
    }

    /// What the host offers.
    pub fn host(&self) -> &HostCapabilities {
        &self.host
    }

    /// The `docker` client of the container level.
    pub fn docker(&self) -> &Path {
        &self.docker
    }

    /// Whether `level` can be provided here, and how (or why not).
    pub fn level(&self, level: IsolationLevel) -> Result<String, String> {
        if matches!(level, IsolationLevel::Process | IsolationLevel::Sandbox)
            && self.launcher.is_empty()
        {
            return Err(
                "no launcher: run Handoff as the `handoff` program (its `isolate` subcommand applies the confinement)"
                    .to_owned(),
            );
        }
        self.host.level(level)
    }

    /// Refuses a configuration this host cannot honour (fail closed).
    pub fn check(&self, config: &IsolationConfig) -> Result<(), IsolationError> {
        let unavailable = |reason: String| IsolationError::Unavailable {
            level: config.level.to_string(),
            reason,
        };
        self.level(config.level).map_err(unavailable)?;
        match config.level {
            IsolationLevel::None if !config.limits.is_empty() => Err(unavailable(
                "resource limits need level process or stronger".to_owned(),
            )),
            IsolationLevel::Process | IsolationLevel::Sandbox => self
                .host
                .cgroups
                .can_limit(&config.limits)
                .map_err(unavailable),
            IsolationLevel::Container if config.image.is_none() => {
                Err(unavailable("no container image configured".to_owned()))
            }
            _ => Ok(()),
        }
    }

    /// The command running `argv` in `workdir` as the run named `name`: its cgroup and
    /// container take the name, so it must be the run's own — a name another run (a task's
    /// earlier run, still stopped by an instance that lost the task) also uses shares its
    /// processes. `inherited` is Handoff's own environment (filtered by the policy), `env` the
    /// executor's variables (they win).
    pub fn prepare(
        &self,
        config: &IsolationConfig,
        name: &str,
        workdir: &Path,
        argv: &[OsString],
        inherited: impl IntoIterator<Item = (OsString, OsString)>,
        env: &[(OsString, OsString)],
    ) -> Result<Prepared, IsolationError> {
        self.check(config)?;
        let Some((program, args)) = argv.split_first() else {
            return Err(IsolationError::Spec("nothing to run".to_owned()));
        };
        if config.level == IsolationLevel::None {
            return Ok(Prepared {
                program: program.clone(),
                args: args.to_vec(),
                env_clear: false,
                env: env.to_vec(),
                own_session: false,
                cgroup: None,
                container: None,
            });
        }
        let mut vars = config.env.filter(inherited);
        vars.retain(|(k, _)| !env.iter().any(|(e, _)| e == k));
        vars.extend(env.iter().cloned());
        if config.level == IsolationLevel::Container {
            return self.prepare_container(config, name, workdir, argv, vars);
        }
        let cgroup = if self.host.cgroups.can_freeze() || !config.limits.is_empty() {
            Some(TaskCgroup::create(
                &self.host.cgroups,
                name,
                &config.limits,
            )?)
        } else {
            None
        };
        let sandboxed = config.level == IsolationLevel::Sandbox;
        let mut writable = vec![workdir.to_owned()];
        writable.extend(config.writable.iter().cloned());
        let bwrap = match (&self.host.bwrap, sandboxed) {
            (Ok((bwrap, _)), true) => Some(BwrapPlan {
                bwrap: bwrap.clone(),
                hide: config.hide.clone(),
                writable: config.writable.clone(),
                expose: under_tmp(
                    self.launcher
                        .first()
                        .map(PathBuf::from)
                        .into_iter()
                        .chain(program_paths(program)),
                ),
            }),
            _ => None,
        };
        if sandboxed && bwrap.is_some() {
            // bubblewrap's private /tmp is writable inside; Landlock must not forbid it.
            writable.push(PathBuf::from("/tmp"));
            // An inherited TMPDIR names a host directory that is read-only in here.
            if !env.iter().any(|(k, _)| k == "TMPDIR") {
                vars.retain(|(k, _)| k != "TMPDIR");
                vars.push(("TMPDIR".into(), "/tmp".into()));
            }
        }
        let spec = LaunchSpec {
            launcher: self.launcher.clone(),
            parent: i32::try_from(std::process::id()).unwrap_or(0),
            workdir: workdir.to_owned(),
            network: config.network,
            cgroup_procs: cgroup
                .as_ref()
                .map(TaskCgroup::procs_files)
                .unwrap_or_default(),
            rlimits: config.rlimits,
            bwrap,
            landlock: (sandboxed && self.host.landlock).then_some(writable),
            deny_inet: sandboxed && config.network == NetworkMode::Off && self.host.seccomp,
        };
        let mut launch = launch::launcher_args(Stage::Outer, &spec, argv)?.into_iter();
        let program = launch
            .next()
            .ok_or_else(|| IsolationError::Spec("the launcher is not configured".to_owned()))?;
        Ok(Prepared {
            program,
            args: launch.collect(),
            env_clear: true,
            env: vars,
            own_session: true,
            cgroup,
            container: None,
        })
    }

    fn prepare_container(
        &self,
        config: &IsolationConfig,
        name: &str,
        workdir: &Path,
        argv: &[OsString],
        vars: Vec<(OsString, OsString)>,
    ) -> Result<Prepared, IsolationError> {
        let image = config
            .image
            .clone()
            .ok_or_else(|| IsolationError::Spec("no container image".to_owned()))?;
        let container = format!("handoff-{name}");
        let spec = ContainerSpec {
            docker: self.docker.clone(),
            name: container.clone(),
            labels: vec![("handoff_run".to_owned(), name.to_owned())],
            image,
            workdir: workdir.to_owned(),
            network: config.network,
            limits: config.limits,
            env_names: vars.iter().map(|(k, _)| k.clone()).collect(),
            argv: argv.to_vec(),
        };
        let mut args = container::run_args(&spec).into_iter();
        let program = args
            .next()
            .ok_or_else(|| IsolationError::Spec("docker is not configured".to_owned()))?;
        Ok(Prepared {
            program,
            args: args.collect(),
            env_clear: true,
            env: vars,
            own_session: false,
            cgroup: None,
            container: Some(container),
        })
    }
}

/// Where `program` lives: the path found through `PATH`, each link it goes through and the
/// file it ends at (npm's `.bin` links point into the package; a link may live in another
/// directory than its target, and the sandbox needs every one of them).
fn program_paths(program: &OsString) -> Vec<PathBuf> {
    let path = PathBuf::from(program);
    let found = if path.components().count() > 1 {
        Some(path)
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|candidate| candidate.is_file())
        })
    };
    let Some(found) = found else {
        return Vec::new();
    };
    let mut paths = vec![found.clone()];
    let mut hop = found.clone();
    // Linux gives up after 40 links; so does this.
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&hop) else {
            break;
        };
        hop = hop.parent().map_or(target.clone(), |dir| dir.join(&target));
        paths.push(hop.clone());
    }
    if let Ok(real) = std::fs::canonicalize(&found) {
        paths.push(real);
    }
    paths
}

/// For each path under `/tmp`, its top directory there (`/tmp/<name>`): all of it may be needed
/// (a program's libraries, a package's modules), and the private `/tmp` would hide it.
fn under_tmp(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut tops: Vec<PathBuf> = paths
        .into_iter()
        .filter_map(|p| {
            let rest = p.strip_prefix("/tmp").ok()?;
            let first = rest.components().next()?;
            Some(Path::new("/tmp").join(first))
        })
        .collect();
    tops.sort();
    tops.dedup();
    tops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_found_with_every_link_on_its_way() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("package/bin/agent.js");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "#!/bin/sh\n").unwrap();
        let links = dir.path().join("links");
        std::fs::create_dir(&links).unwrap();
        std::os::unix::fs::symlink("../package/bin/agent.js", links.join("middle")).unwrap();
        std::os::unix::fs::symlink(links.join("middle"), links.join("agent")).unwrap();
        let paths = program_paths(&links.join("agent").into_os_string());
        assert_eq!(paths[0], links.join("agent"));
        assert_eq!(paths[1], links.join("middle"));
        assert_eq!(
            std::fs::canonicalize(paths.last().unwrap()).unwrap(),
            std::fs::canonicalize(&real).unwrap()
        );
        assert!(
            program_paths(&"/nowhere/agent".into()).len() == 1,
            "a missing program is its path"
        );
    }

    #[test]
    fn programs_under_tmp_are_exposed_by_their_top_directory() {
        let tops = under_tmp([
            PathBuf::from("/tmp/ci/target/debug/handoff"),
            PathBuf::from("/tmp/ci/tests/agents/opencode"),
            PathBuf::from("/usr/bin/bash"),
            PathBuf::from("/tmp"),
        ]);
        assert_eq!(tops, [PathBuf::from("/tmp/ci")]);
    }
}
