//! External hooks.
