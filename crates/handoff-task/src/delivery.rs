//! What Handoff does with a task's branch when a round ends completed.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// How a completed round's branch is delivered.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Leave the commits on the task's branch in the repository.
    #[default]
    Branch,
    /// Also push the branch to the configured remote and run the `after_push` hook.
    Push,
}

impl Delivery {
    /// The mode's name as the config and the wire spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Branch => "branch",
            Delivery::Push => "push",
        }
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Delivery {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "branch" => Ok(Delivery::Branch),
            "push" => Ok(Delivery::Push),
            _ => Err("expected branch or push".to_owned()),
        }
    }
}
