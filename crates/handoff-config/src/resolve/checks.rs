//! Checks of single values, shared by the sections.

use crate::{ByteSize, Secret};

pub(super) fn at_least_one(v: &u32) -> Result<(), String> {
    if *v >= 1 {
        Ok(())
    } else {
        Err("must be at least 1".to_owned())
    }
}

pub(super) fn at_least_one_u64(v: &u64) -> Result<(), String> {
    at_least_one(&u32::try_from(*v).unwrap_or(u32::MAX))
}

pub(super) fn at_least_one_byte(v: &ByteSize) -> Result<(), String> {
    if v.bytes() >= 1 {
        Ok(())
    } else {
        Err("must be at least 1 byte".to_owned())
    }
}

pub(super) fn positive_millis(v: &u64) -> Result<(), String> {
    if *v >= 1 {
        Ok(())
    } else {
        Err("must be at least 1 ms".to_owned())
    }
}

/// An allowed Origin is `null` or `scheme://host[:port|:*]` with nothing after the authority.
pub(super) fn valid_origins(origins: &Vec<String>) -> Result<(), String> {
    for origin in origins {
        if origin == "null" {
            continue;
        }
        let Some((scheme, rest)) = origin.split_once("://") else {
            return Err(format!(
                "origin {origin:?} needs a scheme, e.g. http://localhost:*"
            ));
        };
        if scheme.is_empty() || rest.is_empty() || rest.contains('/') {
            return Err(format!(
                "origin {origin:?} must be scheme://host[:port], with no path"
            ));
        }
    }
    Ok(())
}

pub(super) fn http_url(url: &Option<String>) -> Result<(), String> {
    match url {
        Some(u) if !(u.starts_with("http://") || u.starts_with("https://")) => {
            Err("expected an http:// or https:// URL".to_owned())
        }
        _ => Ok(()),
    }
}

pub(super) fn json_object(json: &Option<String>) -> Result<(), String> {
    match json
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
    {
        Some(Ok(serde_json::Value::Object(_))) | None => Ok(()),
        Some(Ok(_)) => Err("expected a JSON object".to_owned()),
        Some(Err(e)) => Err(format!("expected a JSON object: {e}")),
    }
}

pub(super) fn loopback_hosts() -> Vec<String> {
    ["localhost", "127.0.0.1", "::1"]
        .map(str::to_owned)
        .to_vec()
}

pub(super) fn loopback_origins() -> Vec<String> {
    ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
        .map(str::to_owned)
        .to_vec()
}

pub(super) fn postgres_url(url: &Option<Secret>) -> Result<(), String> {
    match url.as_ref().map(Secret::expose) {
        Some(u) if !(u.starts_with("postgres://") || u.starts_with("postgresql://")) => {
            Err("expected a postgres:// or postgresql:// URL".to_owned())
        }
        _ => Ok(()),
    }
}

pub(super) fn pool_size(size: &u32) -> Result<(), String> {
    if *size as usize > crate::acp::MAX_POOL {
        return Err(format!(
            "at most {} (each is a whole agent process)",
            crate::acp::MAX_POOL
        ));
    }
    Ok(())
}
