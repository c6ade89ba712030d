mod common;
mod edge;
mod metrics;
mod sessions;
mod stateless;
mod tools;
