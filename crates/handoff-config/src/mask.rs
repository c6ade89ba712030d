//! Masking of secrets that sit inside setting values (an API key in an inline OpenCode config,
//! a password in a URL) before a value is shown in `handoff config`, `doctor`, errors or logs.
//!
//! Settings that are secrets as a whole are masked by their [`crate::SettingSpec`]; this module
//! covers the ones whose value is structured text that only partly holds secrets.

use serde_json::Value;

/// What a masked secret is shown as.
pub const MASK: &str = "********";

/// Masks every secret in a setting value as shown to people: JSON (object or array) has the
/// values of secret-looking keys, at any depth, and every header value replaced; any other text
/// has the password of each URL it holds replaced.
pub fn mask_setting_text(text: &str) -> String {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(mut json) = serde_json::from_str::<Value>(text)
    {
        return if mask_json(&mut json) {
            json.to_string()
        } else {
            text.to_owned()
        };
    }
    mask_url_credentials(text)
}

/// Masks secrets in `value` in place; true when anything was masked.
pub fn mask_json(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            let mut changed = false;
            for (key, inner) in map.iter_mut() {
                changed |= if is_secret_key(key) {
                    mask_whole(inner)
                } else if key.eq_ignore_ascii_case("headers") {
                    mask_header_values(inner)
                } else {
                    mask_json(inner)
                };
            }
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, v| mask_json(v) | c),
        Value::String(text) => {
            let masked = mask_url_credentials(text);
            let changed = masked != *text;
            *text = masked;
            changed
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Masks the password of every `scheme://user:password@host` URL in `text`.
pub fn mask_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends at the first `/`, `?`, `#` or whitespace.
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                if let Some(colon) = userinfo.find(':') {
                    out.push_str(&userinfo[..=colon]);
                }
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Whether a JSON key names a secret: case-insensitive, `-` and `_` ignored.
fn is_secret_key(key: &str) -> bool {
    let norm: String = key
        .chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    norm == "key"
        || norm == "authorization"
        || norm.ends_with("apikey")
        || norm.ends_with("accesskey")
        || norm.ends_with("privatekey")
        || norm.ends_with("token")
        || norm.contains("password")
        || norm.contains("passwd")
        || norm.contains("secret")
        || norm.contains("credential")
        || norm.contains("cookie")
}

/// Replaces a secret-keyed value whole (an object of credentials included).
fn mask_whole(value: &mut Value) -> bool {
    match value {
        Value::Null => false,
        Value::String(s) if s.is_empty() => false,
        _ => {
            *value = Value::String(MASK.to_owned());
            true
        }
    }
}

/// Every value of a `headers` object is a possible credential (`Authorization`, `x-api-key`,
/// vendor-specific names), so all are masked and only the names stay.
fn mask_header_values(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => map.values_mut().fold(false, |c, v| mask_whole(v) | c),
        // A list of `{name, value}` pairs or a header string: mask whole.
        Value::Array(_) | Value::String(_) => mask_whole(value),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn masked(value: Value) -> Value {
        let text = mask_setting_text(&value.to_string());
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn provider_api_keys_are_masked_at_any_depth() {
        let config = json!({
            "provider": {
                "openai": {"options": {"apiKey": "sk-live-123", "baseURL": "https://api.openai.com/v1"}},
                "local": {"options": {"api_key": "sk-local-456", "nested": [{"deep": {"API-KEY": "sk-789"}}]}}
            },
            "model": "openai/gpt-5"
        });
        let out = masked(config);
        assert_eq!(out["provider"]["openai"]["options"]["apiKey"], MASK);
        assert_eq!(
            out["provider"]["openai"]["options"]["baseURL"],
            "https://api.openai.com/v1"
        );
        assert_eq!(out["provider"]["local"]["options"]["api_key"], MASK);
        assert_eq!(
            out["provider"]["local"]["options"]["nested"][0]["deep"]["API-KEY"],
            MASK
        );
        assert_eq!(out["model"], "openai/gpt-5");
        assert!(!out.to_string().contains("sk-"), "{out}");
    }

    #[test]
    fn arrays_of_objects_and_token_password_secret_keys_are_masked() {
        let out = masked(json!([
            {"name": "a", "accessToken": "t1", "refresh_token": "t2"},
            {"name": "b", "password": "p", "client_secret": "s", "credentials": {"user": "u"}},
            {"name": "c", "max_tokens": 5, "authorization": "Bearer x"}
        ]));
        assert_eq!(out[0]["accessToken"], MASK);
        assert_eq!(out[0]["refresh_token"], MASK);
        assert_eq!(out[1]["password"], MASK);
        assert_eq!(out[1]["client_secret"], MASK);
        assert_eq!(out[1]["credentials"], MASK);
        assert_eq!(out[2]["authorization"], MASK);
        assert_eq!(out[2]["max_tokens"], 5, "not a secret");
        assert_eq!(out[0]["name"], "a");
    }

    #[test]
    fn every_header_value_is_masked_and_names_stay() {
        let out = masked(json!({
            "mcp": {"remote": {"url": "https://mcp.example", "headers": {
                "Authorization": "Bearer abc", "x-api-key": "k", "X-Custom-Auth": "c"
            }}}
        }));
        let headers = &out["mcp"]["remote"]["headers"];
        assert_eq!(headers["Authorization"], MASK);
        assert_eq!(headers["x-api-key"], MASK);
        assert_eq!(headers["X-Custom-Auth"], MASK);
        assert_eq!(out["mcp"]["remote"]["url"], "https://mcp.example");
    }

    #[test]
    fn url_passwords_are_masked_in_plain_text_and_json_strings() {
        assert_eq!(
            mask_setting_text("https://user:hunter2@host:8080/path?q=1"),
            format!("https://user:{MASK}@host:8080/path?q=1")
        );
        assert_eq!(
            mask_setting_text("http://tok@host/"),
            format!("http://{MASK}@host/")
        );
        let out = masked(json!({"baseURL": "https://u:p@models.example/v1"}));
        assert_eq!(
            out["baseURL"],
            format!("https://u:{MASK}@models.example/v1")
        );
    }

    #[test]
    fn values_without_secrets_are_returned_unchanged() {
        for text in [
            "4555",
            "[a, b]",
            r#"["codex", "--model", "x"]"#,
            r#"{"b": 1,  "a": {"c": null}}"#,
            "http://127.0.0.1:3000",
            "not json {",
        ] {
            assert_eq!(mask_setting_text(text), text);
        }
    }
}
