//! The store traits, implemented once for every [`crate::backend::Backend`] (both stores) —
//! except [`crate::PeerStore`], whose wake-ups differ by dialect (each store's `peers`).

mod approvals;
mod instances;
mod integrations;
mod tasks;
