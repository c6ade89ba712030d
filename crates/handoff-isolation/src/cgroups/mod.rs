//! cgroups: resource limits, freezing and killing a task's whole process tree — v2 where its
//! controllers are delegated, v1 controllers where that is what the host has.

mod support;
mod task;

pub use support::CgroupSupport;
pub use task::{TaskCgroup, sweep};
