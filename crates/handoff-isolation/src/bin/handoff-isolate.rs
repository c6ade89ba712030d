//! The isolation launcher as a program of its own (the `handoff` binary runs the same code as
//! `handoff isolate`): `handoff-isolate outer|inner <spec JSON> -- <argv…>`, or
//! `handoff-isolate keeper [<server pid>]` (the run fence's keeper).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some((mode, rest)) = args.split_first()
        && mode == "keeper"
    {
        return match handoff_isolation::keeper::run(rest) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("handoff-isolate keeper: {error}");
                ExitCode::from(126)
            }
        };
    }
    match handoff_isolation::launch::run(&args) {
        Ok(never) => match never {},
        Err(error) => {
            eprintln!("handoff-isolate: {error}");
            ExitCode::from(126)
        }
    }
}
