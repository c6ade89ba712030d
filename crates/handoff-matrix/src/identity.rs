//! The name a Matrix sender acts under in Handoff's histories and audit: agent ids allow only
//! `A-Z a-z 0-9 _ -`, so `@alice.b:example.org` becomes `mx-alice_b-example_org-<hash>`, the
//! hash of the whole id keeping two ids that read alike apart.

use handoff_task::{AgentId, MatrixUserId};

/// The principal name of `user`.
pub fn acting_name(user: &MatrixUserId) -> AgentId {
    let clean: String = user
        .as_str()
        .trim_start_matches('@')
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' => c,
            ':' => '-',
            _ => '_',
        })
        .take(100)
        .collect();
    let name = format!("mx-{clean}-{:08x}", fnv(user.as_str()));
    // Only the characters above and at most 3 + 100 + 9 of them: always an agent id.
    AgentId::parse(&name).unwrap_or_else(|_| fallback(user))
}

fn fallback(user: &MatrixUserId) -> AgentId {
    let name = format!("mx-{:08x}", fnv(user.as_str()));
    AgentId::parse(&name).unwrap_or_else(|_| unreachable_name())
}

#[allow(clippy::unwrap_used)]
fn unreachable_name() -> AgentId {
    // "mx-" and eight hex digits always parse.
    AgentId::parse("mx-00000000").unwrap()
}

/// 32-bit FNV-1a: stable across processes and versions.
fn fnv(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn senders_get_distinct_valid_agent_names() {
        let a = MatrixUserId::parse("@alice.b:example.org").unwrap();
        let b = MatrixUserId::parse("@alice_b:example.org").unwrap();
        let name = acting_name(&a);
        assert!(
            name.as_str().starts_with("mx-alice_b-example_org-"),
            "{name}"
        );
        assert_ne!(acting_name(&a), acting_name(&b));
        assert_eq!(acting_name(&a), acting_name(&a));
        let long = MatrixUserId::parse(&format!("@{}:x.org", "z".repeat(200))).unwrap();
        assert!(acting_name(&long).as_str().len() <= 128);
    }
}
