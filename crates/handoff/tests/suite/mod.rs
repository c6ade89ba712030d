mod cli;
mod harness;
mod interop;
mod tasks;
