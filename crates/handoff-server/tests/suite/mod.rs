mod common;
mod edge;
mod metrics;
mod sessions;
mod stateless;
mod tasks_ext;
mod tools;
