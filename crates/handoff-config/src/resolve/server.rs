//! The `[server]` and `[auth]` sections.

use std::time::Duration;

use super::{Resolver, checks::*};
use crate::{ByteSize, ConfigError, Secret, ServerConfig};

/// The HTTP server: address, accepted hosts and origins, tokens, limits.
pub(super) fn server(r: &mut Resolver) -> Result<ServerConfig, ConfigError> {
    let host: String = r.get("server.host", "127.0.0.1".to_owned())?;
    let port = r.get("server.port", 3500u16)?;
    let mut allowed_hosts = r.get("server.allowed_hosts", loopback_hosts())?;
    let allowed_origins =
        r.get_checked("server.allowed_origins", loopback_origins(), valid_origins)?;
    let cors_origins = r.get_checked("server.cors_origins", Vec::<String>::new(), valid_origins)?;
    let public_url = r.optional::<String>("server.public_url")?;
    let public_url = r
        .check("server.public_url", public_url, crate::public_url::check)?
        .map(crate::public_url::normalize);
    let auth_token = r.optional::<Secret>("server.auth_token")?;
    let tokens = r.get("auth.tokens", crate::TokenGrants::default())?;
    let default_agent = r.optional::<String>("auth.default_agent")?;
    let default_agent = r.check("auth.default_agent", default_agent, |agent| {
        agent.as_deref().map_or(Ok(()), |a| {
            handoff_task::AgentId::parse(a)
                .map(drop)
                .map_err(|e| e.to_string())
        })
    })?;
    let default_agent = default_agent.and_then(|a| handoff_task::AgentId::parse(&a).ok());
    let max_body_bytes = r.get("server.max_body_bytes", ByteSize(4 << 20))?;
    let idle = r.get("server.session_idle_timeout_secs", 1800u64)?;
    let unused = r.get_checked(
        "server.unused_session_timeout_secs",
        30u64,
        at_least_one_u64,
    )?;
    let max_sessions = r.get_checked("server.max_sessions", 1024u32, at_least_one)?;
    let per_client = r.get_checked("server.max_sessions_per_client", 64u32, at_least_one)?;
    let grace = r.get("server.shutdown_grace_secs", 10u64)?;
    let header_secs = r.get_checked("server.header_read_timeout_secs", 10u64, at_least_one_u64)?;
    let body_secs = r.get_checked("server.body_read_timeout_secs", 30u64, at_least_one_u64)?;
    let keep_alive_secs =
        r.get_checked("server.keep_alive_timeout_secs", 60u64, at_least_one_u64)?;
    let max_connections = r.get_checked("server.max_connections", 512u32, at_least_one)?;
    // A non-loopback bind name must be an accepted Host, or the server would refuse itself.
    if !["0.0.0.0", "::", "[::]"].contains(&host.as_str())
        && !allowed_hosts.iter().any(|h| h == &host)
    {
        allowed_hosts.push(host.clone());
    }
    // Other services reach Handoff by its public name: the Host they send is Handoff's own.
    if let Some(public) = public_url.as_deref().and_then(crate::public_url::host)
        && !allowed_hosts.contains(&public)
    {
        allowed_hosts.push(public);
    }
    let server = ServerConfig {
        host,
        port,
        allowed_hosts,
        allowed_origins,
        cors_origins,
        public_url,
        auth_token,
        tokens,
        default_agent,
        max_body_bytes,
        session_idle_timeout: Duration::from_secs(idle),
        unused_session_timeout: Duration::from_secs(unused),
        max_sessions,
        max_sessions_per_client: per_client,
        shutdown_grace: Duration::from_secs(grace),
        header_read_timeout: Duration::from_secs(header_secs),
        body_read_timeout: Duration::from_secs(body_secs),
        keep_alive_timeout: Duration::from_secs(keep_alive_secs),
        max_connections,
    };

    Ok(server)
}
