//! The store traits, implemented once for every [`crate::backend::Backend`] (both stores).

mod approvals;
mod instances;
mod integrations;
mod peers;
mod tasks;
