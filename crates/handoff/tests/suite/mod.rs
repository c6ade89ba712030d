mod cli;
mod executors;
mod harness;
mod interop;
mod mcp;
mod opencode_recovery;
mod tasks;
