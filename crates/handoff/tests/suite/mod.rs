mod cli;
mod harness;
mod interop;
mod mcp;
mod opencode;
mod tasks;
