//! Agent tokens derived from a gateway token: HMAC-SHA256 of the agent's id under the gateway
//! token. Each is bound to one agent — it cannot speak for another — and needs no
//! configuration: Handoff recomputes it from the `x-agent-id` a request names, so an agent
//! connected later (`handoff letta connect --mode native`) works without a restart. Rotating
//! the gateway token revokes every token derived from it.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::Secret;

/// What every derived token starts with (version 1 of the derivation).
pub const DERIVED_TOKEN_PREFIX: &str = "hoa1_";

/// Separates this use of the gateway token from any other.
const CONTEXT: &[u8] = b"handoff agent token v1\0";

/// The token of `agent` derived from `gateway`.
pub fn derived_agent_token(gateway: &Secret, agent: &str) -> Secret {
    let mut mac = Hmac::<Sha256>::new_from_slice(gateway.expose().as_bytes())
        .unwrap_or_else(|_| unreachable_key());
    mac.update(CONTEXT);
    mac.update(agent.as_bytes());
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Secret::new(format!("{DERIVED_TOKEN_PREFIX}{hex}"))
}

/// HMAC takes a key of any length; this is never reached.
fn unreachable_key() -> Hmac<Sha256> {
    #[allow(clippy::expect_used)]
    Hmac::<Sha256>::new_from_slice(&[0]).expect("HMAC accepts any key length")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_has_its_own_token_under_each_gateway_token() {
        let gateway = Secret::new("gateway-token-0123456789");
        let a = derived_agent_token(&gateway, "agent-a");
        assert_eq!(a, derived_agent_token(&gateway, "agent-a"), "stable");
        assert_ne!(a, derived_agent_token(&gateway, "agent-b"));
        assert_ne!(
            a,
            derived_agent_token(&Secret::new("another-gateway"), "agent-a")
        );
        assert!(a.expose().starts_with(DERIVED_TOKEN_PREFIX));
        assert_eq!(a.expose().len(), DERIVED_TOKEN_PREFIX.len() + 64);
        assert!(!a.expose().contains("gateway-token"));
    }
}
