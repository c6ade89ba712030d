//! The model gateway's per-task tokens: HMAC-SHA256 of a task's id and claim under the
//! gateway key. A token names the one run it was made for (`fence`, counted up at every claim),
//! so it dies with the run — a later run, a follow-up round or another instance's takeover
//! gets a new one — and it opens the gateway only: every other route refuses it.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::Secret;

/// What every task model token starts with (version 1).
pub const MODEL_TOKEN_PREFIX: &str = "hmt1_";

/// Separates this use of the gateway key from any other.
const CONTEXT: &[u8] = b"handoff model token v1\0";

/// The token of task `task`'s run under claim `fence`, made with `key`.
pub fn model_token(key: &Secret, task: &str, fence: i64) -> Secret {
    let hex: String = mac(key, task, fence)
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Secret::new(format!("{MODEL_TOKEN_PREFIX}{task}.{fence}.{hex}"))
}

/// The task and claim a token was made for with `key`, if it was (checked in constant time).
pub fn model_token_owner(key: &Secret, token: &str) -> Option<(String, i64)> {
    let rest = token.strip_prefix(MODEL_TOKEN_PREFIX)?;
    let mut parts = rest.splitn(3, '.');
    let (task, fence, hex) = (parts.next()?, parts.next()?, parts.next()?);
    let fence: i64 = fence.parse().ok()?;
    let tag = decode_hex(hex)?;
    mac(key, task, fence).verify_slice(&tag).ok()?;
    Some((task.to_owned(), fence))
}

fn mac(key: &Secret, task: &str, fence: i64) -> Hmac<Sha256> {
    #[allow(clippy::expect_used)]
    let mut mac = Hmac::<Sha256>::new_from_slice(key.expose().as_bytes())
        .expect("HMAC accepts any key length");
    mac.update(CONTEXT);
    mac.update(task.as_bytes());
    mac.update(b"\0");
    mac.update(fence.to_string().as_bytes());
    mac
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_run_and_nothing_else_passes() {
        let key = Secret::new("k".repeat(64));
        let task = "task_abcdefghijklmnopqrstuvwxyz";
        let token = model_token(&key, task, 3);
        assert!(token.expose().starts_with(MODEL_TOKEN_PREFIX));
        assert_eq!(
            model_token_owner(&key, token.expose()),
            Some((task.to_owned(), 3))
        );
        assert_ne!(token, model_token(&key, task, 4), "each claim its own");
        assert_eq!(
            model_token_owner(&Secret::new("other"), token.expose()),
            None
        );
        let forged = token.expose().replace(".3.", ".4.");
        assert_eq!(model_token_owner(&key, &forged), None);
        for bad in ["", "hmt1_", "hmt1_a.b.c", "Bearer x", "hmt1_t.1.zz"] {
            assert_eq!(model_token_owner(&key, bad), None, "{bad}");
        }
    }
}
