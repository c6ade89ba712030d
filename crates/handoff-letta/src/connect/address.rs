//! Whether Letta would accept an MCP server URL: its `validate_mcp_server_url` refuses blocked
//! host names and any address Python's `ipaddress` does not call global, on registration and
//! before every connection. Checked here first, so MCP mode fails before touching Letta.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Host names Letta refuses outright.
const BLOCKED_NAMES: &[&str] = &["localhost", "metadata.google.internal"];

/// Host name endings Letta refuses.
const BLOCKED_SUFFIXES: &[&str] = &[
    ".local",
    ".localdomain",
    ".home.arpa",
    ".svc",
    ".cluster.local",
];

/// Why Letta would refuse `host` (a name or an address, IPv6 unbracketed), or `None`.
pub(crate) fn refused_host(host: &str) -> Option<String> {
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if BLOCKED_NAMES.contains(&name.as_str()) || BLOCKED_SUFFIXES.iter().any(|s| name.ends_with(s))
    {
        return Some(format!("a local host name ({host})"));
    }
    let ip: IpAddr = name.parse().ok()?;
    refused_ip(ip)
}

/// Why Letta would refuse `ip`, or `None` when it is global.
pub(crate) fn refused_ip(ip: IpAddr) -> Option<String> {
    let kind = match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4_kind(v4),
            None => v6_kind(v6),
        },
    }?;
    Some(format!("{kind} ({ip})"))
}

/// What makes an IPv4 address non-global, as Python 3.11's `ipaddress` sees it.
fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let kind = match (a, b, c) {
        (127, ..) => "loopback",
        (10, ..) | (192, 168, _) => "a private address",
        (172, 16..=31, _) => "a private address",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared address space (carrier-grade NAT)",
        (0, ..) => "an unspecified (this-network) address",
        (192, 0, 0) | (198, 18..=19, _) => "a reserved address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (240..=255, ..) => "a reserved address",
        _ => return None,
    };
    Some(kind)
}

/// What makes an IPv6 address non-global.
fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let kind = if ip.is_loopback() {
        "loopback"
    } else if ip.is_unspecified() {
        "unspecified"
    } else if s[0] & 0xfe00 == 0xfc00 {
        "a private (unique local) address"
    } else if s[0] & 0xffc0 == 0xfe80 || s[0] & 0xffc0 == 0xfec0 {
        "link-local"
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        "a documentation address"
    } else if (s[0] == 0x2001 && s[1] < 0x0200) || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) {
        "a reserved address"
    } else {
        return None;
    };
    Some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letta_refuses_local_names_and_non_global_addresses() {
        for host in [
            "localhost",
            "LOCALHOST.",
            "box.local",
            "db.svc",
            "127.0.0.1",
            "10.1.2.3",
            "172.20.0.1",
            "192.168.1.10",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "2001:db8::1",
        ] {
            assert!(refused_host(host).is_some(), "{host} passes");
        }
    }

    #[test]
    fn public_names_and_global_addresses_pass() {
        for host in [
            "handoff.example.com",
            "11.0.0.1",
            "8.8.8.8",
            "172.32.0.1",
            "2606:4700::1111",
        ] {
            assert_eq!(refused_host(host), None, "{host}");
        }
        assert_eq!(
            refused_host("127.0.0.1").as_deref(),
            Some("loopback (127.0.0.1)")
        );
    }
}
