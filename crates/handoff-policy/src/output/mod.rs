//! Caps on what a tool returns: text is cut by lines and bytes (never inside a UTF-8 code
//! point) from the head, the tail or both ends, the full text is spilled to a private file the
//! caller can read back, and structured results are capped leaf by leaf and as a whole.

mod spill;
mod truncate;
mod value;

pub use spill::{SpillDir, SpillError, SpillFile, SpillPage};
pub use truncate::{Cap, Cut, Direction, truncate};
pub use value::{Limits, Truncation, fits, limit_value};
