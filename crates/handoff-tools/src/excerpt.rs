//! Bounded renderings of what callers send, for errors, audit rows and log lines: never the
//! payload itself (a 1 MiB argument must not come back in the error, the log and the store),
//! at most a short excerpt and its size.

use std::borrow::Cow;

use serde_json::Value;

/// Longest excerpt of a caller's value, in characters.
pub const EXCERPT_CHARS: usize = 64;

/// Longest free text (an error message, an audit reason), in characters.
pub const TEXT_CHARS: usize = 480;

/// `text` when it has at most `max` characters, else its first characters, `…` and its size.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some(_) => {
            let keep = max.saturating_sub(1).min(EXCERPT_CHARS.max(max / 2));
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len()))
        }
    }
}

/// A caller's string, at most [`EXCERPT_CHARS`] of it.
pub fn excerpt(text: &str) -> Cow<'_, str> {
    clip(text, EXCERPT_CHARS)
}

/// A JSON pointer with every segment (a caller's field name, say) excerpted.
pub fn clip_pointer(pointer: &str) -> Cow<'_, str> {
    if pointer.len() <= EXCERPT_CHARS * 2 {
        return Cow::Borrowed(pointer);
    }
    let segments: Vec<Cow<'_, str>> = pointer.split('/').map(|s| clip(s, 32)).collect();
    let joined = segments.join("/");
    // Deep pointers stay bounded too.
    Cow::Owned(clip(&joined, TEXT_CHARS).into_owned())
}

/// A value as an error may show it: short values whole, long ones as an excerpt with their
/// size (`"aaaa…" (string of 1048576 bytes)`, `an array of 3000 items`).
pub fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => describe_str(s),
        Value::Array(items) => {
            short_json(value).unwrap_or_else(|| format!("an array of {} items", items.len()))
        }
        Value::Object(map) => {
            short_json(value).unwrap_or_else(|| format!("an object with {} fields", map.len()))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            clip(&value.to_string(), EXCERPT_CHARS).into_owned()
        }
    }
}

/// A caller's string as [`describe`] shows it: quoted whole when short, else an excerpt and
/// its size.
pub fn describe_str(s: &str) -> String {
    match s.char_indices().nth(EXCERPT_CHARS) {
        None => format!("{s:?}"),
        Some(_) => {
            let end = s
                .char_indices()
                .nth(EXCERPT_CHARS - 16)
                .map_or(s.len(), |(i, _)| i);
            format!("{:?}… (string of {} bytes)", &s[..end], s.len())
        }
    }
}

/// The value's compact JSON when it has at most [`EXCERPT_CHARS`] bytes; serializing stops as
/// soon as it is longer, so a huge value costs nothing here.
fn short_json(value: &Value) -> Option<String> {
    struct Bounded(Vec<u8>);
    impl std::io::Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + buf.len() > EXCERPT_CHARS {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded(Vec::new());
    serde_json::to_writer(&mut out, value).ok()?;
    String::from_utf8(out.0).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn short_text_is_kept_and_long_text_clipped_with_its_size() {
        assert_eq!(clip("abc", 8), "abc");
        let long = "é".repeat(10_000);
        let clipped = clip(&long, 100);
        assert!(clipped.chars().count() < 100, "{clipped}");
        assert!(clipped.ends_with("… (20000 bytes)"), "{clipped}");
    }

    #[test]
    fn values_are_described_by_excerpt_and_size() {
        assert_eq!(describe(&json!("x")), "\"x\"");
        assert_eq!(describe(&json!([1, 2])), "[1,2]");
        let big = describe(&json!("a".repeat(1 << 20)));
        assert!(big.len() < 100, "{big}");
        assert!(big.contains("string of 1048576 bytes"), "{big}");
        let many = describe(&json!(vec![1; 5000]));
        assert_eq!(many, "an array of 5000 items");
        let wide = describe(&json!({"k": "v".repeat(500)}));
        assert_eq!(wide, "an object with 1 fields");
    }

    #[test]
    fn pointers_keep_their_shape_with_long_segments_clipped() {
        assert_eq!(clip_pointer("/metadata/key"), "/metadata/key");
        let long = format!("/metadata/{}", "k".repeat(100_000));
        let clipped = clip_pointer(&long);
        assert!(clipped.starts_with("/metadata/kkk"), "{clipped}");
        assert!(clipped.len() < 100, "{clipped}");
    }
}
