//! Typed parsing of raw setting values, from text (env, CLI) or TOML.

use std::{fmt, path::PathBuf};

use crate::{LogFormat, LogLevel, PromptVia, Secret, WorkdirCleanup};

/// A raw value before typed parsing: text from env/CLI, or a TOML value from the file.
#[derive(Debug, Clone)]
pub(crate) enum RawValue {
    Text(String),
    Toml(toml::Value),
}

/// A table setting's entries by name, from one JSON object (text) or TOML tables; `shape` says
/// what was expected when neither fits.
pub(crate) fn named_tables<R: serde::de::DeserializeOwned>(
    value: &toml::Value,
    shape: &str,
) -> Result<std::collections::BTreeMap<String, R>, String> {
    match value {
        toml::Value::String(text) => {
            serde_json::from_str(text.trim()).map_err(|e| format!("{shape}: {e}"))
        }
        other => {
            let json = serde_json::to_value(other).map_err(|e| e.to_string())?;
            serde_json::from_value(json).map_err(|e| format!("{shape}: {e}"))
        }
    }
}

/// Whether `name` may name an entry of a table setting: lowercase letters, digits, - and _.
pub(crate) fn is_entry_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// A type a setting can hold.
pub(crate) trait FromRaw: Sized {
    /// Parses text from the environment or a flag.
    fn from_text(text: &str) -> Result<Self, String>;

    /// Parses a TOML value; strings go through [`FromRaw::from_text`], scalars via their text.
    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::String(s) => Self::from_text(s),
            toml::Value::Integer(i) => Self::from_text(&i.to_string()),
            toml::Value::Float(f) => Self::from_text(&f.to_string()),
            toml::Value::Boolean(b) => Self::from_text(&b.to_string()),
            other => Err(format!(
                "expected a single value, found {}",
                other.type_str()
            )),
        }
    }

    /// Parses whichever raw form is given.
    fn from_raw(raw: &RawValue) -> Result<Self, String> {
        match raw {
            RawValue::Text(text) => Self::from_text(text),
            RawValue::Toml(value) => Self::from_toml(value),
        }
    }
}

/// Parses the boolean spellings people put in environment files.
pub(crate) fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("expected true/false (also 1/0, yes/no, on/off)".to_owned()),
    }
}

impl FromRaw for bool {
    fn from_text(text: &str) -> Result<Self, String> {
        parse_bool(text)
    }
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl FromRaw for $t {
            fn from_text(text: &str) -> Result<Self, String> {
                text.trim().parse::<$t>().map_err(|_| {
                    format!("expected a whole number from 0 to {}", <$t>::MAX)
                })
            }
        }
    )*};
}
unsigned!(u16, u32, u64);

impl FromRaw for f64 {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
            _ => Err("expected a positive number".to_owned()),
        }
    }
}

impl FromRaw for String {
    fn from_text(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err("expected a non-empty value".to_owned());
        }
        Ok(trimmed.to_owned())
    }
}

impl FromRaw for Secret {
    fn from_text(text: &str) -> Result<Self, String> {
        String::from_text(text).map(Secret::new)
    }
}

impl FromRaw for PathBuf {
    fn from_text(text: &str) -> Result<Self, String> {
        String::from_text(text).map(PathBuf::from)
    }
}

/// Lists: comma-separated in text, arrays of strings in TOML; empty text means an empty list.
impl FromRaw for Vec<String> {
    fn from_text(text: &str) -> Result<Self, String> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect())
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    toml::Value::String(s) => Ok(s.clone()),
                    other => Err(format!("expected strings, found {}", other.type_str())),
                })
                .collect(),
            toml::Value::String(s) => Self::from_text(s),
            other => Err(format!(
                "expected an array of strings, found {}",
                other.type_str()
            )),
        }
    }
}

/// A size in bytes, written as `1048576`, `512k`, `4MiB`, `2g`, `1.5GB` (powers of 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// Size in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 4] = [
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        for (unit, size) in UNITS {
            if self.0 >= size && self.0.is_multiple_of(size) {
                return write!(f, "{}{unit}", self.0 / size);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl FromRaw for ByteSize {
    fn from_text(text: &str) -> Result<Self, String> {
        const EXPECTED: &str = "expected a size such as 1048576, 512k, 4MiB or 2g";
        let t = text.trim().to_ascii_lowercase();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let multiplier: u64 = match unit.trim() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            _ => return Err(EXPECTED.to_owned()),
        };
        let value: f64 = number.parse().map_err(|_| EXPECTED.to_owned())?;
        let bytes = value * multiplier as f64;
        if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
            return Err(EXPECTED.to_owned());
        }
        Ok(ByteSize(bytes as u64))
    }
}

impl FromRaw for LogLevel {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "error" => Ok(LogLevel::Error),
            "warn" | "warning" => Ok(LogLevel::Warn),
            "info" => Ok(LogLevel::Info),
            "debug" => Ok(LogLevel::Debug),
            "trace" => Ok(LogLevel::Trace),
            _ => Err("expected error, warn, info, debug or trace".to_owned()),
        }
    }
}

impl FromRaw for LogFormat {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(LogFormat::Auto),
            "text" | "pretty" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err("expected auto, text or json".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(ByteSize::from_text("2g"), Ok(ByteSize(2 << 30)));
        assert_eq!(ByteSize::from_text("4MiB"), Ok(ByteSize(4 << 20)));
        assert_eq!(ByteSize::from_text("512k"), Ok(ByteSize(512 << 10)));
        assert_eq!(ByteSize::from_text("1.5GB"), Ok(ByteSize(3 << 29)));
        assert_eq!(ByteSize::from_text("1048576"), Ok(ByteSize(1 << 20)));
        for bad in ["", "abc", "2x", "-1", "0", "g"] {
            assert!(ByteSize::from_text(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(ByteSize(4 << 20).to_string(), "4MiB");
        assert_eq!(ByteSize(1000).to_string(), "1000");
    }

    #[test]
    fn numbers_reject_nan_and_garbage() {
        assert!(u16::from_text("70000").is_err());
        assert!(u16::from_text("abc").is_err());
        assert!(f64::from_text("NaN").is_err());
        assert!(f64::from_text("-2").is_err());
        assert_eq!(f64::from_text("2.5"), Ok(2.5));
    }

    #[test]
    fn lists_from_text_and_toml() {
        assert_eq!(
            Vec::<String>::from_text(" a, b ,,c"),
            Ok(vec!["a".into(), "b".into(), "c".into()])
        );
        let arr = toml::Value::Array(vec![toml::Value::String("x".into())]);
        assert_eq!(Vec::<String>::from_toml(&arr), Ok(vec!["x".into()]));
        assert!(Vec::<String>::from_toml(&toml::Value::Integer(1)).is_err());
    }
}

/// A command line: a JSON array of strings, or words separated by spaces, in text; an array in
/// TOML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv(pub Vec<String>);

impl FromRaw for Argv {
    fn from_text(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let words: Vec<String> = if trimmed.starts_with('[') {
            serde_json::from_str(trimmed)
                .map_err(|e| format!("expected a JSON array of strings: {e}"))?
        } else {
            trimmed.split_whitespace().map(str::to_owned).collect()
        };
        if words.is_empty() || words[0].is_empty() {
            return Err("expected a program and its arguments".to_owned());
        }
        Ok(Argv(words))
    }

    fn from_toml(value: &toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::Array(_) => {
                let words = Vec::<String>::from_toml(value)?;
                Self::from_text(&serde_json::Value::from(words).to_string())
            }
            toml::Value::String(s) => Self::from_text(s),
            other => Err(format!(
                "expected an array of strings, found {}",
                other.type_str()
            )),
        }
    }
}

impl FromRaw for PromptVia {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "stdin" => Ok(PromptVia::Stdin),
            "argument" | "arg" => Ok(PromptVia::Argument),
            _ => Err("expected stdin or argument".to_owned()),
        }
    }
}

impl FromRaw for WorkdirCleanup {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "retain" | "keep" => Ok(WorkdirCleanup::Retain),
            "on_completion" | "delete_on_completion" => Ok(WorkdirCleanup::OnCompletion),
            _ => Err("expected retain or on_completion".to_owned()),
        }
    }
}

impl FromRaw for crate::ModelWire {
    fn from_text(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(crate::ModelWire::OpenAi),
            "anthropic" => Ok(crate::ModelWire::Anthropic),
            _ => Err("expected openai or anthropic".to_owned()),
        }
    }
}

impl FromRaw for handoff_task::Delivery {
    fn from_text(text: &str) -> Result<Self, String> {
        text.parse()
    }
}

impl FromRaw for handoff_isolation::IsolationLevel {
    fn from_text(text: &str) -> Result<Self, String> {
        text.to_ascii_lowercase().parse()
    }
}

impl FromRaw for handoff_isolation::NetworkMode {
    fn from_text(text: &str) -> Result<Self, String> {
        text.to_ascii_lowercase().parse()
    }
}
