//! Confinement inside the child: bubblewrap's namespaces and mounts, Landlock's filesystem and
//! network rules, seccomp's socket filter.

mod bwrap;
mod landlock;
mod probe;
mod seccomp;

pub use bwrap::{BwrapSpec, bwrap_args};
pub use landlock::{landlock_available, restrict_filesystem};
pub use probe::bwrap_works;
pub(crate) use probe::output_within;
pub use seccomp::{deny_inet_sockets, seccomp_available};
