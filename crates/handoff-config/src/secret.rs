use std::fmt;

/// A secret value (token, password) that never prints itself.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself; call only where it is sent, never where it is logged.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The masked rendering used in logs and `handoff config`.
    pub fn masked(&self) -> &'static str {
        "********"
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.masked())
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.masked())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_formats_its_value() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s} {s:?}"), "******** ********");
        assert_eq!(s.expose(), "hunter2");
    }
}
