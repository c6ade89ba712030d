//! `server.public_url`: Handoff's address as other services (a Letta server) reach it, e.g.
//! `https://handoff.example.com` behind a reverse proxy. Checked by hand (scheme, authority,
//! optional path) so a typo stops start-up instead of a registration pointing nowhere.

/// Checks `http(s)://host[:port][/path]`: no credentials, query or fragment, a real port.
pub(crate) fn check(url: &Option<String>) -> Result<(), String> {
    let Some(url) = url else {
        return Ok(());
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or("expected http://host[:port] or https://host[:port], with an optional path")?;
    if scheme != "http" && scheme != "https" {
        return Err(format!("scheme {scheme:?} is not http or https"));
    }
    if rest.contains(['?', '#']) {
        return Err("a query or fragment is not allowed: give the base URL".into());
    }
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.contains('@') {
        return Err(
            "credentials in the URL are not allowed (Handoff sends its token itself)".into(),
        );
    }
    let (host, port) = split_authority(authority)?;
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(1..) => {}
            _ => return Err(format!("port {port:?} is not 1 to 65535")),
        }
    }
    Ok(())
}

/// The URL without trailing slashes (`<public_url>/mcp` is built from it).
pub(crate) fn normalize(url: String) -> String {
    url.trim_end_matches('/').to_owned()
}

/// The host of a checked URL as `server.allowed_hosts` lists it (IPv6 without brackets).
pub(crate) fn host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let (host, _) = split_authority(authority).ok()?;
    Some(host.to_owned())
}

/// `host[:port]` or `[v6][:port]` into the host (unbracketed) and the port text.
fn split_authority(authority: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (literal, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address needs its closing ]")?;
        if literal.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("{literal:?} is not an IPv6 address"));
        }
        return match after {
            "" => Ok((literal, None)),
            _ => after
                .strip_prefix(':')
                .map(|port| (literal, Some(port)))
                .ok_or_else(|| format!("unexpected {after:?} after the IPv6 address")),
        };
    }
    match authority.split_once(':') {
        Some((host, port)) => Ok((host, Some(port))),
        None => Ok((authority, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(url: &str) -> Result<(), String> {
        check(&Some(url.to_owned()))
    }

    #[test]
    fn base_urls_with_hosts_ports_and_paths_pass() {
        for url in [
            "https://handoff.example.com",
            "https://handoff.example.com/",
            "http://11.0.0.1:3500",
            "https://example.com/team/handoff",
            "http://[2001:db8::1]:8080",
        ] {
            assert_eq!(checked(url), Ok(()), "{url}");
        }
        assert_eq!(check(&None), Ok(()));
    }

    #[test]
    fn malformed_urls_are_refused_with_the_reason() {
        for (url, reason) in [
            ("handoff.example.com", "expected http://"),
            ("ftp://example.com", "not http or https"),
            ("https://example.com/mcp?x=1", "query or fragment"),
            ("https://user:pw@example.com", "credentials"),
            ("https://:3500", "no host"),
            ("https://example.com:0", "not 1 to 65535"),
            ("https://example.com:http", "not 1 to 65535"),
            ("http://[::1", "closing ]"),
            ("http://[nope]:1", "not an IPv6 address"),
        ] {
            let err = checked(url).unwrap_err();
            assert!(err.contains(reason), "{url}: {err}");
        }
    }

    #[test]
    fn hosts_come_out_as_allowed_hosts_lists_them() {
        assert_eq!(
            host("https://h.example.com:8443/x").as_deref(),
            Some("h.example.com")
        );
        assert_eq!(
            host("http://[2001:db8::1]:80").as_deref(),
            Some("2001:db8::1")
        );
        assert_eq!(
            normalize("https://h.example.com//".into()),
            "https://h.example.com"
        );
    }
}
