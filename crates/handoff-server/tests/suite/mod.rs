mod common;
mod edge;
mod isolation;
mod metrics;
mod sessions;
mod stateless;
mod tasks_ext;
mod tools;
