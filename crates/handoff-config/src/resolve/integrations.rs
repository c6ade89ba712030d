//! The `[letta]` and `[matrix]` sections.

use std::time::Duration;

use super::{Resolver, checks::*};
use crate::{ConfigError, LettaConfig};

/// The Letta integration.
pub(super) fn letta(r: &mut Resolver) -> Result<LettaConfig, ConfigError> {
    let api_url = r.optional::<String>("letta.api_url")?;
    let api_url = r.check("letta.api_url", api_url, http_url)?;
    let letta = {
        let d = LettaConfig::off();
        let secs = |s: u64| Duration::from_secs(s);
        LettaConfig {
            api_url,
            api_token: r.optional("letta.api_token")?,
            tool_prefix: r.get_checked(
                "letta.tool_prefix",
                d.tool_prefix.clone(),
                |p: &String| crate::check_tool_prefix(p),
            )?,
            workspace_blocks: r.get("letta.workspace_blocks", d.workspace_blocks)?,
            block_limit: {
                let limit = r.get("letta.block_limit", d.block_limit)?;
                r.check("letta.block_limit", limit, |l| {
                    if *l >= crate::letta::MIN_BLOCK_LIMIT {
                        Ok(())
                    } else {
                        Err(format!(
                            "a workspace block needs at least {} characters",
                            crate::letta::MIN_BLOCK_LIMIT
                        ))
                    }
                })?
            },
            min_update_interval: Duration::from_millis(r.get(
                "letta.min_update_interval_ms",
                d.min_update_interval.as_millis() as u64,
            )?),
            detach_delay: secs(r.get("letta.detach_delay_secs", d.detach_delay.as_secs())?),
            block_retention: secs(
                r.get("letta.block_retention_secs", d.block_retention.as_secs())?,
            ),
            notify: r.get("letta.notify", d.notify)?,
            notify_role: r.get("letta.notify_role", d.notify_role)?,
            notify_sync: r.get("letta.notify_sync", d.notify_sync)?,
            request_timeout: secs(r.get_checked(
                "letta.request_timeout_secs",
                d.request_timeout.as_secs(),
                at_least_one_u64,
            )?),
            max_retries: r.get("letta.max_retries", d.max_retries)?,
            max_concurrent_requests: r.get_checked(
                "letta.max_concurrent_requests",
                d.max_concurrent_requests,
                at_least_one,
            )?,
            requests_per_second: r.get_checked(
                "letta.requests_per_second",
                d.requests_per_second,
                at_least_one,
            )?,
            sweep_interval: secs(r.get_checked(
                "letta.sweep_interval_secs",
                d.sweep_interval.as_secs(),
                at_least_one_u64,
            )?),
        }
    };
    Ok(letta)
}

/// The `[matrix]` section.
pub(super) fn matrix(r: &mut Resolver) -> Result<crate::MatrixConfig, ConfigError> {
    let d = crate::MatrixConfig::off();
    let url = r.optional::<String>("matrix.homeserver_url")?;
    let homeserver_url = r.check("matrix.homeserver_url", url, http_url)?;
    let users = |list: &Vec<String>| {
        list.iter().enumerate().try_for_each(|(i, u)| {
            handoff_task::MatrixUserId::parse(u)
                .map(|_| ())
                .map_err(|e| format!("entry {}: {e}", i + 1))
        })
    };
    let observers = r.get_checked("matrix.default_observers", Vec::<String>::new(), users)?;
    let patterns = |list: &Vec<String>| {
        list.iter().enumerate().try_for_each(|(i, c)| {
            crate::Controller::parse(c)
                .map(|_| ())
                .map_err(|e| format!("entry {}: {e}", i + 1))
        })
    };
    let controllers = r.get_checked("matrix.controllers", Vec::<String>::new(), patterns)?;
    let owner_pairs = |list: &Vec<String>| {
        list.iter().enumerate().try_for_each(|(i, o)| {
            crate::Owner::parse(o)
                .map(|_| ())
                .map_err(|e| format!("entry {}: {e}", i + 1))
        })
    };
    let owners = r.get_checked("matrix.owners", Vec::<String>::new(), owner_pairs)?;
    Ok(crate::MatrixConfig {
        homeserver_url,
        access_token: r.optional("matrix.access_token")?,
        room_per_task: r.get("matrix.room_per_task", d.room_per_task)?,
        observers_may_talk: r.get("matrix.observers_may_talk", d.observers_may_talk)?,
        default_observers: observers
            .iter()
            .filter_map(|u| handoff_task::MatrixUserId::parse(u).ok())
            .collect(),
        controllers: controllers
            .iter()
            .filter_map(|c| crate::Controller::parse(c).ok())
            .collect(),
        event_interval: Duration::from_millis(r.get_checked(
            "matrix.event_interval_ms",
            d.event_interval.as_millis() as u64,
            positive_millis,
        )?),
        archive_after: Duration::from_secs(
            r.get("matrix.archive_after_secs", d.archive_after.as_secs())?,
        ),
        request_timeout: Duration::from_secs(r.get_checked(
            "matrix.request_timeout_secs",
            d.request_timeout.as_secs(),
            at_least_one_u64,
        )?),
        sync_timeout: Duration::from_millis(
            r.get("matrix.sync_timeout_ms", d.sync_timeout.as_millis() as u64)?,
        ),
        owners: owners
            .iter()
            .filter_map(|o| crate::Owner::parse(o).ok())
            .collect(),
    })
}
