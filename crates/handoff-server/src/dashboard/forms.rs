//! What a state-changing request must show before it is read: that it comes from a page of
//! this dashboard (a same-origin `Origin`, else the form's CSRF token; a bearer token needs
//! neither, as no other site can make a browser send one), and a body within the cap, read
//! into named fields. Errors name the field and never repeat what was sent.

use std::{collections::HashMap, time::Duration};

use axum::body::Body;
use http::{HeaderMap, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde::de::{DeserializeOwned, IntoDeserializer, value::Error as WordError};
use serde_json::Value;

use super::auth::Viewer;

/// Why a request was refused, as status and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// What is wrong (naming the field, never its value).
    pub(crate) message: String,
}

impl Refused {
    /// A refusal with its status and message.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// The refusal as an error page.
    pub(crate) fn page(&self) -> axum::response::Response {
        super::views::error_page(self.status, &self.message)
    }

    /// A field that is missing or wrong.
    pub(crate) fn field(name: &str, problem: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            format!("field `{name}`: {problem}"),
        )
    }
}

/// Whether `origin` is this server as the request's `Host` names it.
pub(crate) fn same_origin(headers: &HeaderMap) -> Option<bool> {
    let origin = headers.get(header::ORIGIN)?.to_str().ok()?;
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    Some(matches!((authority, host), (Some(a), Some(h)) if a.eq_ignore_ascii_case(h)))
}

/// Refuses a state change that may come from another site: a foreign `Origin` always; no
/// `Origin` unless the viewer used a bearer token or the form carries its CSRF token.
pub(crate) fn check_origin(
    headers: &HeaderMap,
    viewer: Option<&Viewer>,
    fields: &Fields,
) -> Result<(), Refused> {
    match same_origin(headers) {
        Some(true) => Ok(()),
        Some(false) => Err(Refused::new(
            StatusCode::FORBIDDEN,
            "Forbidden: the request's Origin is not this dashboard",
        )),
        None if viewer.is_some_and(|v| v.bearer) => Ok(()),
        None => {
            let expected = viewer.and_then(|v| v.csrf.as_deref());
            match (expected, fields.get("csrf")) {
                (Some(expected), Some(sent))
                    if crate::edge::constant_time_eq(expected.as_bytes(), sent.as_bytes()) =>
                {
                    Ok(())
                }
                _ => Err(Refused::new(
                    StatusCode::FORBIDDEN,
                    "Forbidden: a change needs a same-origin Origin header or the form's csrf field",
                )),
            }
        }
    }
}

/// A form's fields by name (the first of repeated names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Fields(HashMap<String, String>);

impl Fields {
    /// The field's value, if sent.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The field's value; an error naming it when absent or empty.
    pub(crate) fn required(&self, name: &str) -> Result<&str, Refused> {
        self.get(name)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| Refused::field(name, "required"))
    }

    /// The field read as one of a wire enum's names, by the enum's own serde (so a form takes
    /// exactly the words the tools take); `None` when not sent, an error naming the field and
    /// what it `expects` for any other word.
    pub(crate) fn choice<T: DeserializeOwned>(
        &self,
        name: &str,
        expects: &str,
    ) -> Result<Option<T>, Refused> {
        self.get(name)
            .map(|word| word_as(name, word, expects))
            .transpose()
    }

    /// [`Fields::choice`] of a field that must be sent.
    pub(crate) fn required_choice<T: DeserializeOwned>(
        &self,
        name: &str,
        expects: &str,
    ) -> Result<T, Refused> {
        word_as(name, self.required(name)?, expects)
    }

    /// Reads an url-encoded form or a JSON object of strings.
    pub(crate) fn parse(content_type: Option<&str>, body: &[u8]) -> Result<Self, Refused> {
        let json = content_type.is_some_and(|t| t.starts_with("application/json"));
        let mut fields = HashMap::new();
        if json {
            let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
                return Err(Refused::new(
                    StatusCode::BAD_REQUEST,
                    "body: expected a JSON object",
                ));
            };
            for (key, value) in map {
                let Value::String(text) = value else {
                    return Err(Refused::field(&key_name(&key), "expected a string"));
                };
                fields.entry(key).or_insert(text);
            }
        } else {
            let pairs =
                serde_urlencoded::from_bytes::<Vec<(String, String)>>(body).map_err(|_| {
                    Refused::new(StatusCode::BAD_REQUEST, "body: not an url-encoded form")
                })?;
            for (key, value) in pairs {
                fields.entry(key).or_insert(value);
            }
        }
        Ok(Self(fields))
    }
}

/// `word` (field `name`'s value) as the enum value serde names so; the refusal never repeats it.
fn word_as<T: DeserializeOwned>(name: &str, word: &str, expects: &str) -> Result<T, Refused> {
    T::deserialize(IntoDeserializer::<WordError>::into_deserializer(word))
        .map_err(|_| Refused::field(name, expects))
}

/// A field name fit to repeat in an error: short names as sent, others not at all.
fn key_name(key: &str) -> String {
    let plain = key.len() <= 32 && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if plain {
        key.to_owned()
    } else {
        "(unnamed)".to_owned()
    }
}

/// Reads the body up to `max` bytes within `deadline`, into fields.
pub(crate) async fn read(
    headers: &HeaderMap,
    body: Body,
    max: usize,
    deadline: Duration,
) -> Result<Fields, Refused> {
    let too_large = || {
        Refused::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body: larger than the {max}-byte limit"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(too_large());
    }
    let collected = tokio::time::timeout(deadline, Limited::new(body, max).collect())
        .await
        .map_err(|_| Refused::new(StatusCode::REQUEST_TIMEOUT, "body: did not arrive in time"))?;
    let bytes = match collected {
        Ok(collected) => collected.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err(too_large());
        }
        Err(_) => {
            return Err(Refused::new(
                StatusCode::BAD_REQUEST,
                "body: could not be read",
            ));
        }
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    Fields::parse(content_type, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use handoff_tools::AgentId;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    fn viewer(bearer: bool) -> Viewer {
        Viewer {
            name: AgentId::parse("op").unwrap(),
            csrf: Some("secret-csrf".to_owned()),
            bearer,
            login: !bearer,
        }
    }

    #[test]
    fn origins_must_be_this_server() {
        let none = Fields::default();
        let same = headers(&[
            ("host", "127.0.0.1:3500"),
            ("origin", "http://127.0.0.1:3500"),
        ]);
        assert!(check_origin(&same, Some(&viewer(false)), &none).is_ok());
        for other in ["http://127.0.0.1:9999", "http://evil.example", "null"] {
            let cross = headers(&[("host", "127.0.0.1:3500"), ("origin", other)]);
            let refused = check_origin(&cross, Some(&viewer(true)), &none).unwrap_err();
            assert_eq!(refused.status, StatusCode::FORBIDDEN, "{other}");
        }
    }

    #[test]
    fn without_origin_a_csrf_token_or_a_bearer_token_is_needed() {
        let plain = headers(&[("host", "127.0.0.1:3500")]);
        assert!(check_origin(&plain, Some(&viewer(true)), &Fields::default()).is_ok());
        assert!(check_origin(&plain, Some(&viewer(false)), &Fields::default()).is_err());
        let good = Fields::parse(None, b"csrf=secret-csrf").unwrap();
        assert!(check_origin(&plain, Some(&viewer(false)), &good).is_ok());
        let bad = Fields::parse(None, b"csrf=guess").unwrap();
        assert!(check_origin(&plain, Some(&viewer(false)), &bad).is_err());
        assert!(check_origin(&plain, None, &good).is_err());
    }

    #[test]
    fn fields_parse_and_errors_never_echo() {
        let form = Fields::parse(
            Some("application/x-www-form-urlencoded"),
            b"control=cancel&control=pause&x=%3Cb%3E",
        )
        .unwrap();
        assert_eq!(form.get("control"), Some("cancel"));
        assert_eq!(form.get("x"), Some("<b>"));
        assert_eq!(
            form.required("reason").unwrap_err().message,
            "field `reason`: required"
        );
        let json = Fields::parse(Some("application/json"), br#"{"decision":"allow"}"#).unwrap();
        assert_eq!(json.get("decision"), Some("allow"));
        let bad = Fields::parse(Some("application/json"), br#"{"<script>": 5}"#).unwrap_err();
        assert!(!bad.message.contains("script"), "{}", bad.message);
        let not_json = Fields::parse(Some("application/json"), b"secret-token").unwrap_err();
        assert!(!not_json.message.contains("secret"), "{}", not_json.message);
    }

    #[tokio::test]
    async fn bodies_are_capped() {
        let big = headers(&[("content-length", "999999")]);
        let refused = read(&big, Body::from("x"), 10, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
        let refused = read(
            &HeaderMap::new(),
            Body::from("a=".repeat(20)),
            10,
            Duration::from_secs(1),
        )
        .await
        .unwrap_err();
        assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
    }
}
