//! The isolation launcher as a program of its own (the `handoff` binary runs the same code as
//! `handoff isolate`): `handoff-isolate outer|inner <spec JSON> -- <argv…>`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match handoff_isolation::launch::run(&args) {
        Ok(never) => match never {},
        Err(error) => {
            eprintln!("handoff-isolate: {error}");
            ExitCode::from(126)
        }
    }
}
