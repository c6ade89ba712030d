mod common;
mod edge;
mod sessions;
mod stateless;
mod tools;
