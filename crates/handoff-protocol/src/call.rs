//! What ties a tool's arguments to its name and its result, so a client calls by type.

use serde::{Serialize, de::DeserializeOwned};

/// The arguments of one tool: serialized as `tools/call` `arguments` for [`ToolCall::NAME`],
/// answered with a [`ToolCall::Output`] as `structuredContent`.
pub trait ToolCall: Serialize {
    /// The tool's name on the wire.
    const NAME: &'static str;
    /// What a successful call returns.
    type Output: DeserializeOwned;
}

/// Implements [`ToolCall`] for argument types.
macro_rules! tool_call {
    ($($args:ty => $name:expr, $output:ty;)*) => {
        $(
            impl $crate::ToolCall for $args {
                const NAME: &'static str = $name;
                type Output = $output;
            }
        )*
    };
}

pub(crate) use tool_call;
