mod common;
mod control;
mod files;
mod lifecycle;
mod recovery;
mod scheduling;
