//! Names of proxied MCP tools: `mcp__{server}__{tool}`, only `[A-Za-z0-9_-]`, at most 64
//! characters — a longer name is cut and given a stable hash suffix, and two tools that end up
//! with the same name are an error rather than one shadowing the other.

use std::collections::HashMap;

/// The longest tool name MCP clients accept.
pub const MAX_LEN: usize = 64;

/// Two proxied tools map to one name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("proxied tools {first} and {second} both map to the name {name}")]
pub struct NameCollision {
    /// The shared name.
    pub name: String,
    /// The first tool (`server/tool`).
    pub first: String,
    /// The second tool.
    pub second: String,
}

/// The proxied name of `tool` on `server`.
pub fn proxied_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let full = format!("mcp__{}__{}", clean(server), clean(tool));
    if full.len() <= MAX_LEN {
        return full;
    }
    let suffix = format!(
        "_{:08x}",
        fnv1a(format!("{server}\u{0}{tool}").as_bytes()) as u32
    );
    format!("{}{suffix}", &full[..MAX_LEN - suffix.len()])
}

/// Names every `(server, tool)` pair, refusing collisions.
pub fn proxied_names<'a>(
    tools: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<String>, NameCollision> {
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut names = Vec::new();
    for (server, tool) in tools {
        let name = proxied_name(server, tool);
        let origin = format!("{server}/{tool}");
        if let Some(first) = seen.insert(name.clone(), origin.clone()) {
            return Err(NameCollision {
                name,
                first,
                second: origin,
            });
        }
        names.push(name);
    }
    Ok(names)
}

// FNV-1a: a hash that is the same on every build and platform, which `std`'s is not.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_are_clean_and_short() {
        assert_eq!(
            proxied_name("git hub", "list.issues"),
            "mcp__git_hub__list_issues"
        );
        let long = proxied_name("server", &"t".repeat(100));
        assert_eq!(long.len(), MAX_LEN);
        assert_eq!(long, proxied_name("server", &"t".repeat(100)), "stable");
        assert_ne!(long, proxied_name("server", &"t".repeat(101)));
    }

    #[test]
    fn collisions_are_errors() {
        let err = proxied_names([("a", "x.y"), ("a", "x_y")]).unwrap_err();
        assert_eq!(err.name, "mcp__a__x_y");
        assert!(proxied_names([("a", "x"), ("b", "x")]).is_ok());
    }
}
