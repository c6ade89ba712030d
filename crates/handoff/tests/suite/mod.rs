mod cli;
mod harness;
mod interop;
