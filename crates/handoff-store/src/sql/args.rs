//! [`Arg`]: a value bound to a statement, in the Rust types the stores bind, so each dialect
//! binds it as sqlx would have bound the original value (PostgreSQL types its parameters).

/// One bound value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    /// A 64-bit integer (`INT8` on PostgreSQL).
    I64(Option<i64>),
    /// A 32-bit integer (`INT4` on PostgreSQL).
    I32(Option<i32>),
    /// Text.
    Text(Option<String>),
    /// A boolean.
    Bool(bool),
    /// Bytes.
    Bytes(Option<Vec<u8>>),
}

impl From<i64> for Arg {
    fn from(value: i64) -> Self {
        Self::I64(Some(value))
    }
}

impl From<Option<i64>> for Arg {
    fn from(value: Option<i64>) -> Self {
        Self::I64(value)
    }
}

impl From<i32> for Arg {
    fn from(value: i32) -> Self {
        Self::I32(Some(value))
    }
}

impl From<Option<i32>> for Arg {
    fn from(value: Option<i32>) -> Self {
        Self::I32(value)
    }
}

impl From<bool> for Arg {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

impl From<&str> for Arg {
    fn from(value: &str) -> Self {
        Self::Text(Some(value.to_owned()))
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Self {
        Self::Text(Some(value))
    }
}

impl From<Option<&str>> for Arg {
    fn from(value: Option<&str>) -> Self {
        Self::Text(value.map(str::to_owned))
    }
}

impl From<Option<String>> for Arg {
    fn from(value: Option<String>) -> Self {
        Self::Text(value)
    }
}

impl From<Option<&[u8]>> for Arg {
    fn from(value: Option<&[u8]>) -> Self {
        Self::Bytes(value.map(<[u8]>::to_vec))
    }
}

impl From<&String> for Arg {
    fn from(value: &String) -> Self {
        Self::Text(Some(value.clone()))
    }
}

impl From<&Option<String>> for Arg {
    fn from(value: &Option<String>) -> Self {
        Self::Text(value.clone())
    }
}
