//! Host header allow-list (DNS-rebinding guard).

/// Whether a `Host` value (`name[:port]`) is allowed by `rules` (`name` or `name:port`).
pub(crate) fn host_allowed(rules: &[String], value: &str) -> bool {
    let Some((host, port)) = split(value) else {
        return false;
    };
    rules.iter().any(|rule| match split(rule) {
        Some((rule_host, rule_port)) => {
            rule_host == host && (rule_port.is_none() || rule_port == port)
        }
        None => false,
    })
}

fn split(value: &str) -> Option<(String, Option<u16>)> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else if value.matches(':').count() > 1 {
        // A bare IPv6 literal, as written in config (`::1`).
        (value, None)
    } else {
        match value.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (value, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    Some((host.to_ascii_lowercase(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Vec<String> {
        ["localhost", "127.0.0.1", "::1", "api.example.com:8443"]
            .map(str::to_owned)
            .to_vec()
    }

    #[test]
    fn accepts_listed_hosts() {
        for ok in [
            "localhost",
            "localhost:3500",
            "127.0.0.1:1",
            "[::1]:3500",
            "API.example.com:8443",
        ] {
            assert!(host_allowed(&rules(), ok), "{ok}");
        }
    }

    #[test]
    fn rejects_others() {
        for bad in [
            "evil.example",
            "localhost.evil.example",
            "api.example.com",
            "api.example.com:443",
            "",
            "localhost:x",
        ] {
            assert!(!host_allowed(&rules(), bad), "{bad}");
        }
    }
}
