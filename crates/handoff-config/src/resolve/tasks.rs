//! The `[tasks]` section.

use std::{path::PathBuf, time::Duration};

use super::{Resolver, checks::*};
use crate::{ByteSize, ConfigError, TaskConfig, WorkdirCleanup};

/// The queue, limits, timeouts and outputs of tasks.
pub(super) fn tasks(r: &mut Resolver) -> Result<TaskConfig, ConfigError> {
    let max_concurrent = r.get_checked("tasks.max_concurrent", 10u32, at_least_one)?;
    let per_agent = r.get_checked(
        "tasks.max_concurrent_per_agent",
        max_concurrent,
        at_least_one,
    )?;
    let max_queued = r.get("tasks.max_queued", 1000u32)?;
    let timeout_ms = r.get_checked("tasks.default_timeout_ms", 300_000u64, positive_millis)?;
    let sync_wait_ms = r.get("tasks.sync_wait_ms", 25_000u64)?;
    let poll_interval_ms = r.get_checked("tasks.poll_interval_ms", 1_000u64, positive_millis)?;
    let max_description_bytes = r.get("tasks.max_description_bytes", ByteSize(64 << 10))?;
    let tasks = TaskConfig {
        max_concurrent,
        max_concurrent_per_agent: per_agent,
        max_queued,
        default_timeout: Duration::from_millis(timeout_ms),
        sync_wait: Duration::from_millis(sync_wait_ms),
        poll_interval: Duration::from_millis(poll_interval_ms),
        max_description_bytes,
        default_executor: r.get("tasks.default_executor", "opencode-acp".to_owned())?,
        idempotency_window: Duration::from_secs(r.get("tasks.idempotency_window_secs", 86_400u64)?),
        retention: Duration::from_secs(r.get("tasks.retention_days", 30u64)? * 86_400),
        submissions_per_minute: Some(r.get("tasks.submissions_per_minute", 120u32)?)
            .filter(|rate| *rate > 0),
        submission_burst: r.get_checked("tasks.submission_burst", 20u32, at_least_one)?,
        cancel_grace: Duration::from_millis(r.get("tasks.cancel_grace_ms", 5_000u64)?),
        drain: Duration::from_secs(r.get("tasks.drain_secs", 0u64)?),
        requeue_on_restart: r.get("tasks.requeue_on_restart", false)?,
        artifact_max_bytes: r.get("tasks.artifact_max_bytes", ByteSize(64 << 20))?,
        artifact_inline_bytes: r.get("tasks.artifact_inline_bytes", ByteSize(256 << 10))?,
        output_event_max_bytes: r.get_checked(
            "tasks.output_event_max_bytes",
            ByteSize(64 << 10),
            at_least_one_byte,
        )?,
        output_max_events: r.get("tasks.output_max_events", 10_000u32)?,
        output_events_max_bytes: r.get("tasks.output_events_max_bytes", ByteSize(16 << 20))?,
        snapshot_max_file_bytes: r.get("tasks.snapshot_max_file_bytes", ByteSize(8 << 20))?,
        snapshot_max_bytes: r.get("tasks.snapshot_max_bytes", ByteSize(256 << 20))?,
        snapshot_timeout: Duration::from_secs(r.get_checked(
            "tasks.snapshot_timeout_secs",
            60u64,
            at_least_one_u64,
        )?),
        workdir_roots: r
            .get("tasks.workdir_roots", Vec::<String>::new())?
            .into_iter()
            .map(PathBuf::from)
            .collect(),
        workdir_cleanup: r.get("tasks.workdir_cleanup", WorkdirCleanup::Retain)?,
        git_repository: r.optional("tasks.git_repository")?,
        delivery: r.get("tasks.delivery", handoff_task::Delivery::Branch)?,
        push_remote: r.get_checked("tasks.push_remote", "origin".to_owned(), |n: &String| {
            remote_name(n)
        })?,
        after_push: r.optional("tasks.after_push")?,
        delivery_timeout: Duration::from_secs(r.get_checked(
            "tasks.delivery_timeout_secs",
            300u64,
            at_least_one_u64,
        )?),
    };
    Ok(tasks)
}

/// A remote's name: what `git push` takes as a remote, never an option or a URL with spaces.
fn remote_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && name.len() <= 200
        && !name.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err("expected a git remote's name (no leading -, no spaces)".to_owned())
    }
}
