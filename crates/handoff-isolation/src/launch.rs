//! The launcher: the few steps between Handoff and the agent that must happen inside the child
//! — join the task's cgroups, become a session leader, die with Handoff, take rlimits, enter
//! bubblewrap, and inside it lock the filesystem (Landlock) and the network (seccomp) — each
//! with safe wrappers, ending in `exec` of the agent.
//!
//! Command line: `<launcher> outer|inner <spec JSON> -- <argv…>`.

use std::{
    convert::Infallible,
    ffi::{CString, OsString},
    os::unix::ffi::OsStrExt,
    path::PathBuf,
};

use nix::{
    sys::{
        prctl,
        resource::{Resource, getrlimit, setrlimit},
        signal::Signal,
    },
    unistd::{execvp, getppid, setsid},
};
use serde::{Deserialize, Serialize};

use crate::{
    IsolationError, NetworkMode,
    confine::{self as sandbox, BwrapSpec},
};

/// Resource limits applied with `setrlimit` (never `RLIMIT_AS`: it breaks Node-based agents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Rlimits {
    /// Most open files.
    pub nofile: Option<u64>,
    /// Largest core dump (0: none).
    pub core: Option<u64>,
    /// Largest file the process may write.
    pub fsize: Option<u64>,
}

impl Rlimits {
    /// Open files bounded, no core dumps (they can hold secrets), no file beyond 16 GiB.
    pub const DEFAULT: Rlimits = Rlimits {
        nofile: Some(65_536),
        core: Some(0),
        fsize: Some(16 << 30),
    };
}

/// How to enter bubblewrap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BwrapPlan {
    /// The `bwrap` binary.
    pub bwrap: PathBuf,
    /// Paths covered by an empty tmpfs inside (Handoff's data, other tasks).
    pub hide: Vec<PathBuf>,
    /// Writable paths besides the task directory.
    pub writable: Vec<PathBuf>,
    /// Paths under `/tmp` that must stay visible (read-only) over the private `/tmp`.
    pub expose: Vec<PathBuf>,
}

/// Everything the launcher applies, as Handoff decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// The launcher itself (program and leading arguments), re-run inside the sandbox.
    pub launcher: Vec<String>,
    /// The process that must stay alive (Handoff); the launcher refuses to start an orphan.
    pub parent: i32,
    /// The task directory.
    pub workdir: PathBuf,
    /// Network inside the sandbox.
    pub network: NetworkMode,
    /// `cgroup.procs` files to join before anything else runs.
    pub cgroup_procs: Vec<PathBuf>,
    /// rlimits to set.
    pub rlimits: Rlimits,
    /// Enter bubblewrap (sandbox level with user namespaces).
    pub bwrap: Option<BwrapPlan>,
    /// Landlock: the only writable paths (sandbox level).
    pub landlock: Option<Vec<PathBuf>>,
    /// Refuse IPv4/IPv6 sockets (sandbox level, network off).
    pub deny_inet: bool,
}

/// Which half of the launch this process performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Started by Handoff: cgroups, session, parent-death signal, rlimits, then bubblewrap.
    Outer,
    /// Started by bubblewrap: Landlock and seccomp, then the agent.
    Inner,
}

impl Stage {
    fn as_str(self) -> &'static str {
        match self {
            Stage::Outer => "outer",
            Stage::Inner => "inner",
        }
    }
}

/// The launcher's arguments for `stage`, `spec` and the agent's `argv`.
pub fn launcher_args(
    stage: Stage,
    spec: &LaunchSpec,
    argv: &[OsString],
) -> Result<Vec<OsString>, IsolationError> {
    let json = serde_json::to_string(spec).map_err(|e| IsolationError::Spec(e.to_string()))?;
    let mut args: Vec<OsString> = spec.launcher.iter().map(OsString::from).collect();
    args.push(stage.as_str().into());
    args.push(json.into());
    args.push("--".into());
    args.extend(argv.iter().cloned());
    Ok(args)
}

/// Runs the launcher with its command line (after the program and leading arguments); only
/// returns on failure.
pub fn run(args: &[OsString]) -> Result<Infallible, IsolationError> {
    let usage = || IsolationError::Spec("usage: outer|inner <spec JSON> -- <argv…>".to_owned());
    let (stage, rest) = args.split_first().ok_or_else(usage)?;
    let stage = match stage.to_str() {
        Some("outer") => Stage::Outer,
        Some("inner") => Stage::Inner,
        _ => return Err(usage()),
    };
    let (json, rest) = rest.split_first().ok_or_else(usage)?;
    let spec: LaunchSpec =
        serde_json::from_slice(json.as_bytes()).map_err(|e| IsolationError::Spec(e.to_string()))?;
    let argv = match rest.split_first() {
        Some((dashes, argv)) if dashes == "--" && !argv.is_empty() => argv,
        _ => return Err(usage()),
    };
    match stage {
        Stage::Outer => outer(&spec, argv),
        Stage::Inner => inner(&spec, argv),
    }
}

fn outer(spec: &LaunchSpec, argv: &[OsString]) -> Result<Infallible, IsolationError> {
    // First, so every process the agent ever starts is counted, frozen and killed with it.
    for procs in &spec.cgroup_procs {
        std::fs::write(procs, "0").map_err(|e| IsolationError::Cgroup {
            path: procs.display().to_string(),
            message: format!("joining: {e}"),
        })?;
    }
    setsid().map_err(|e| confine("setsid", e))?;
    prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| confine("prctl", e))?;
    // Handoff may have died between fork and prctl; then nobody would stop this run.
    if getppid().as_raw() != spec.parent {
        return Err(IsolationError::Confine {
            mechanism: "prctl",
            message: "the parent exited before the launch".to_owned(),
        });
    }
    set_rlimits(&spec.rlimits)?;
    match &spec.bwrap {
        Some(plan) => {
            let inner = launcher_args(Stage::Inner, spec, argv)?;
            let args = sandbox::bwrap_args(&BwrapSpec {
                bwrap: plan.bwrap.clone(),
                workdir: spec.workdir.clone(),
                network: spec.network,
                writable: plan.writable.clone(),
                hide: plan.hide.clone(),
                expose: plan.expose.clone(),
                argv: inner,
            });
            exec(&args)
        }
        // Without user namespaces the kernel confinement is the sandbox.
        None => inner(spec, argv),
    }
}

fn inner(spec: &LaunchSpec, argv: &[OsString]) -> Result<Infallible, IsolationError> {
    if let Some(writable) = &spec.landlock {
        sandbox::restrict_filesystem(writable, spec.network)?;
    }
    if spec.deny_inet {
        sandbox::deny_inet_sockets()?;
    }
    exec(argv)
}

fn set_rlimits(limits: &Rlimits) -> Result<(), IsolationError> {
    for (resource, value) in [
        (Resource::RLIMIT_NOFILE, limits.nofile),
        (Resource::RLIMIT_CORE, limits.core),
        (Resource::RLIMIT_FSIZE, limits.fsize),
    ] {
        let Some(value) = value else { continue };
        // Raising a hard limit needs CAP_SYS_RESOURCE; never ask for more than the hard one.
        let (_, hard) = getrlimit(resource).map_err(|e| confine("rlimit", e))?;
        let value = value.min(hard);
        setrlimit(resource, value, value).map_err(|e| confine("rlimit", e))?;
    }
    Ok(())
}

fn exec(argv: &[OsString]) -> Result<Infallible, IsolationError> {
    let args = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| IsolationError::Spec(format!("argument with a NUL byte: {e}")))?;
    let Some(program) = args.first() else {
        return Err(IsolationError::Spec("nothing to run".to_owned()));
    };
    execvp(program, &args).map_err(|e| IsolationError::Confine {
        mechanism: "exec",
        message: format!("{}: {e}", program.to_string_lossy()),
    })
}

fn confine(mechanism: &'static str, errno: nix::errno::Errno) -> IsolationError {
    IsolationError::Confine {
        mechanism,
        message: errno.to_string(),
    }
}
