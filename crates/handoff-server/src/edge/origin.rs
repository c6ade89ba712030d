//! Exact Origin matching: scheme, host and port must all match a configured rule.

/// A parsed `Origin` header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The opaque `Origin: null`.
    Null,
    /// A `scheme://host[:port]` tuple; `port` is explicit or the scheme's default.
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

/// Which ports a rule accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortRule {
    Any,
    Exact(Option<u16>),
}

/// One allowed-origin entry (`http://localhost:*`, `https://app.example.com`, `null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OriginRule {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: PortRule,
    },
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

/// Splits `scheme://authority` with nothing after the authority.
fn split(text: &str) -> Option<(String, &str)> {
    let (scheme, authority) = text.split_once("://")?;
    let valid_scheme = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !valid_scheme || authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ']) {
        return None;
    }
    Some((scheme.to_ascii_lowercase(), authority))
}

/// Splits `host[:port]`, keeping IPv6 brackets out of the host; brackets must hold an IPv6
/// address and a name only name characters, so `[localhost]` is no loophole.
fn host_port(authority: &str) -> Option<(String, Option<&str>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        host.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        return Some((host.to_ascii_lowercase(), port));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, Some(port)),
        Some(_) => return None,
        None => (authority, None),
    };
    let name = host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    name.then(|| (host.to_ascii_lowercase(), port))
}

/// The scheme, lower-cased host and raw port text of `scheme://host[:port]`.
fn parts(value: &str) -> Option<(String, String, Option<&str>)> {
    let (scheme, authority) = split(value)?;
    let (host, port) = host_port(authority)?;
    if host.is_empty() {
        return None;
    }
    Some((scheme, host, port))
}

fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl Origin {
    /// Parses a header value; anything that is not exactly an origin is `None` (rejected).
    pub(crate) fn parse(value: &str) -> Option<Origin> {
        if value == "null" {
            return Some(Origin::Null);
        }
        let (scheme, host, port) = parts(value)?;
        let port = match port {
            Some(p) => Some(parse_port(p)?),
            None => default_port(&scheme),
        };
        Some(Origin::Tuple { scheme, host, port })
    }
}

impl OriginRule {
    /// Parses a configured entry; a missing port means the scheme's default port only.
    pub(crate) fn parse(value: &str) -> Option<OriginRule> {
        if value == "null" {
            return Some(OriginRule::Null);
        }
        let (scheme, host, port) = parts(value)?;
        let port = match port {
            Some("*") => PortRule::Any,
            Some(p) => PortRule::Exact(Some(parse_port(p)?)),
            None => PortRule::Exact(default_port(&scheme)),
        };
        Some(OriginRule::Tuple { scheme, host, port })
    }

    /// Whether `origin` is exactly what this rule allows.
    pub(crate) fn matches(&self, origin: &Origin) -> bool {
        match (self, origin) {
            (OriginRule::Null, Origin::Null) => true,
            (
                OriginRule::Tuple { scheme, host, port },
                Origin::Tuple {
                    scheme: s,
                    host: h,
                    port: p,
                },
            ) => {
                scheme == s
                    && host == h
                    && match port {
                        PortRule::Any => true,
                        PortRule::Exact(expected) => expected == p,
                    }
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(rules: &[&str], origin: &str) -> bool {
        let rules: Vec<_> = rules
            .iter()
            .map(|r| OriginRule::parse(r).unwrap())
            .collect();
        Origin::parse(origin).is_some_and(|o| rules.iter().any(|r| r.matches(&o)))
    }

    const LOOPBACK: &[&str] = &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

    #[test]
    fn loopback_origins_pass() {
        for ok in [
            "http://localhost",
            "http://localhost:6274",
            "http://LOCALHOST:3000",
            "http://127.0.0.1:8080",
            "http://[::1]:9",
        ] {
            assert!(allowed(LOOPBACK, ok), "{ok}");
        }
    }

    #[test]
    fn prefix_and_suffix_tricks_fail() {
        for bad in [
            "http://localhost.evil.example",
            "http://localhost.evil.example:3000",
            "http://evil-localhost:80",
            "http://localhost@evil.example",
            "http://evil.example/localhost",
            "https://localhost:3000",
            "http://127.0.0.1.nip.io",
            "http://localhost:3000/",
            "http://localhost:abc",
            "http://[localhost]:3000",
            "http://[::1]evil.example",
            "http://[::1]:3000evil",
            "http://local\thost:3000",
            "http://localhost:+3000",
            "localhost",
            "null",
            "",
        ] {
            assert!(!allowed(LOOPBACK, bad), "{bad}");
        }
    }

    #[test]
    fn portless_rule_means_default_port_only() {
        assert!(allowed(
            &["https://app.example.com"],
            "https://app.example.com"
        ));
        assert!(allowed(
            &["https://app.example.com"],
            "https://app.example.com:443"
        ));
        assert!(!allowed(
            &["https://app.example.com"],
            "https://app.example.com:8443"
        ));
        assert!(allowed(&["null"], "null"));
    }
}
