//! The `container` level: one `docker run` per task, paused, resumed and killed through the
//! engine. Used only where a Docker engine answers; elsewhere the level is reported unavailable.

use std::{ffi::OsString, path::PathBuf};

use crate::{Limits, NetworkMode};

/// One task's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    /// The `docker` client.
    pub docker: PathBuf,
    /// Container name (`handoff-<run name>`: a run's own, see [`crate::Isolator::prepare`]).
    pub name: String,
    /// Labels (`handoff_run`: the run's name).
    pub labels: Vec<(String, String)>,
    /// Image to run.
    pub image: String,
    /// The task directory, mounted at `/workspace`.
    pub workdir: PathBuf,
    /// Network mode.
    pub network: NetworkMode,
    /// Limits.
    pub limits: Limits,
    /// Variables passed through from the client's environment (`-e NAME`, values never on the
    /// command line).
    pub env_names: Vec<OsString>,
    /// The command inside.
    pub argv: Vec<OsString>,
}

/// `docker run …` for `spec`, starting with the docker binary.
pub fn run_args(spec: &ContainerSpec) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        spec.docker.clone().into(),
        "run".into(),
        "--rm".into(),
        "-i".into(),
        // An init reaps the agent's children and forwards signals.
        "--init".into(),
        "--name".into(),
        spec.name.clone().into(),
    ];
    for (key, value) in &spec.labels {
        args.push("--label".into());
        args.push(format!("{key}={value}").into());
    }
    if let Some(millicores) = spec.limits.cpu_millicores {
        args.push("--cpus".into());
        args.push(format!("{}.{:03}", millicores / 1000, millicores % 1000).into());
    }
    if let Some(bytes) = spec.limits.memory_bytes {
        args.push("--memory".into());
        args.push(format!("{bytes}b").into());
    }
    if let Some(pids) = spec.limits.pids {
        args.push("--pids-limit".into());
        args.push(pids.to_string().into());
    }
    if spec.network == NetworkMode::Off {
        args.push("--network".into());
        args.push("none".into());
    }
    for name in &spec.env_names {
        args.push("-e".into());
        args.push(name.clone());
    }
    let mut volume = spec.workdir.clone().into_os_string();
    volume.push(":/workspace");
    args.extend([
        "-v".into(),
        volume,
        "-w".into(),
        "/workspace".into(),
        spec.image.clone().into(),
    ]);
    args.extend(spec.argv.iter().cloned());
    args
}

/// `docker <verb> <name>` (pause, unpause, kill).
pub fn control_args(docker: &std::path::Path, verb: &str, name: &str) -> Vec<OsString> {
    vec![docker.into(), verb.into(), name.into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_args_are_exact() {
        let spec = ContainerSpec {
            docker: "docker".into(),
            name: "handoff-task_x".into(),
            labels: vec![
                ("task_id".into(), "task_x".into()),
                ("agent_id".into(), "a1".into()),
            ],
            image: "node:22".into(),
            workdir: "/w/task_x".into(),
            network: NetworkMode::Off,
            limits: Limits {
                memory_bytes: Some(536_870_912),
                cpu_millicores: Some(1500),
                pids: Some(256),
            },
            env_names: vec!["ANTHROPIC_API_KEY".into()],
            argv: vec!["claude".into(), "-p".into()],
        };
        let args: Vec<String> = run_args(&spec)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "docker",
                "run",
                "--rm",
                "-i",
                "--init",
                "--name",
                "handoff-task_x",
                "--label",
                "task_id=task_x",
                "--label",
                "agent_id=a1",
                "--cpus",
                "1.500",
                "--memory",
                "536870912b",
                "--pids-limit",
                "256",
                "--network",
                "none",
                "-e",
                "ANTHROPIC_API_KEY",
                "-v",
                "/w/task_x:/workspace",
                "-w",
                "/workspace",
                "node:22",
                "claude",
                "-p"
            ]
        );
    }
}
