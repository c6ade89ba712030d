//! Host header allow-list (DNS-rebinding guard).

use std::net::Ipv6Addr;

/// The host part of a `Host` value (borrowed) or an allow-list rule (owned, lower-cased).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Name<T> {
    /// A bracketed (header) or bare (config) IPv6 literal, compared as an address.
    V6(Ipv6Addr),
    /// A registered name or IPv4 literal, compared without regard to ASCII case.
    Text(T),
}

/// The `Host` allow-list, parsed once from config: a request's `Host` is then checked without
/// parsing a rule or allocating.
#[derive(Debug, Clone)]
pub(crate) struct HostRules(Vec<(Name<String>, Option<u16>)>);

impl HostRules {
    /// The rules `name`, `name:port`, `::1`, `[::1]:port`; one that parses as none of these
    /// allows nothing.
    pub(crate) fn new(rules: &[String]) -> Self {
        let parsed = rules.iter().filter_map(|rule| {
            let (name, port) = parse(rule, true)?;
            let name = match name {
                Name::V6(address) => Name::V6(address),
                Name::Text(text) => Name::Text(text.to_ascii_lowercase()),
            };
            Some((name, port))
        });
        Self(parsed.collect())
    }

    /// Whether a `Host` value (`name[:port]`, `[v6][:port]`) is allowed.
    pub(crate) fn allow(&self, value: &str) -> bool {
        let Some((host, port)) = parse(value, false) else {
            return false;
        };
        self.0.iter().any(|(rule_host, rule_port)| {
            let same = match (rule_host, &host) {
                (Name::V6(rule), Name::V6(host)) => rule == host,
                (Name::Text(rule), Name::Text(host)) => rule.eq_ignore_ascii_case(host),
                _ => false,
            };
            same && (rule_port.is_none() || *rule_port == port)
        })
    }
}

/// Parses strictly: anything that is not exactly a host and an optional port is `None`, so
/// `[::1]evil.example`, `[localhost]` or `localhost:+80` cannot pass as an allowed host.
/// `bare_v6` admits `::1` without brackets, as config lists write it (a header never may).
fn parse(value: &str, bare_v6: bool) -> Option<(Name<&str>, Option<u16>)> {
    let value = value.trim();
    if let Some(rest) = value.strip_prefix('[') {
        let (literal, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            after => Some(port(after.strip_prefix(':')?)?),
        };
        return Some((Name::V6(literal.parse().ok()?), port));
    }
    if bare_v6 && value.matches(':').count() > 1 {
        return Some((Name::V6(value.parse().ok()?), None));
    }
    let (host, port) = match value.split_once(':') {
        Some((host, text)) => (host, Some(port(text)?)),
        None => (value, None),
    };
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    valid.then_some((Name::Text(host), port))
}

/// A port: one to five ASCII digits (`u16::from_str` alone would take `+80`).
fn port(text: &str) -> Option<u16> {
    let digits = !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| text.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> HostRules {
        HostRules::new(
            &[
                "localhost",
                "127.0.0.1",
                "::1",
                "API.example.com:8443",
                "[bad",
            ]
            .map(str::to_owned),
        )
    }

    fn host_allowed(rules: &HostRules, value: &str) -> bool {
        rules.allow(value)
    }

    #[test]
    fn accepts_listed_hosts() {
        for ok in [
            "localhost",
            "localhost:3500",
            "127.0.0.1:1",
            "[::1]:3500",
            "[::1]",
            "[0:0:0:0:0:0:0:1]:3500",
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
            "localhost:",
            ":3500",
        ] {
            assert!(!host_allowed(&rules(), bad), "{bad}");
        }
    }

    #[test]
    fn rejects_lenient_parses() {
        for bad in [
            // Garbage after a bracketed IPv6 literal.
            "[::1]evil.example",
            "[::1]evil.example:3500",
            "[::1]:3500evil",
            "[::1]:3500:1",
            // Brackets around something that is not an IPv6 address.
            "[localhost]",
            "[localhost]:3500",
            "[::1",
            // A bare IPv6 literal is config syntax, not a Host header.
            "::1",
            // Ports `u16::from_str` would take.
            "localhost:+3500",
            "localhost:03500x",
            "localhost:000003500",
            "localhost:65536",
            // Characters no host name has.
            "local host",
            "localhost\t:3500",
            "user@localhost",
            "localhost/path",
            "localhost:3500:3500",
        ] {
            assert!(!host_allowed(&rules(), bad), "{bad:?}");
        }
    }
}
