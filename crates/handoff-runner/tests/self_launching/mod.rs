//! The main of a test binary that is also its own isolation launcher (and run keeper): a
//! runner test cannot reach the `handoff-isolate` binary, so the runs it starts call this very
//! program back with `outer|inner` (or `keeper`). Anything else runs the listed tests, with
//! libtest's name filters and `--list`.

use std::{ffi::OsString, process::ExitCode};

/// One test: a name and its body.
pub type Test = fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

/// Dispatches the launcher's and the keeper's halves, else runs `tests`; `name` labels errors.
pub fn main(name: &str, tests: &[(&str, Test)]) -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match args.first().and_then(|a| a.to_str()) {
        Some("keeper") => return keeper(name, &args[1..]),
        Some("outer" | "inner") => return launch(name, &args),
        _ => {}
    }
    if args.iter().any(|a| a == "--list") {
        for (test, _) in tests {
            println!("{test}: test");
        }
        return ExitCode::SUCCESS;
    }
    // libtest's free arguments are name filters; its options mean nothing here.
    let filters: Vec<String> = args
        .iter()
        .filter_map(|a| a.to_str())
        .filter(|a| !a.starts_with('-'))
        .map(str::to_owned)
        .collect();
    let chosen: Vec<&(&str, Test)> = tests
        .iter()
        .filter(|(test, _)| filters.is_empty() || filters.iter().any(|f| test.contains(f)))
        .collect();
    println!("\nrunning {} tests", chosen.len());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (test, body) in &chosen {
        // A failed assertion panics out of here: the test binary fails with its message.
        runtime.block_on(body());
        println!("test {test} ... ok");
    }
    println!("\ntest result: ok. {} passed\n", chosen.len());
    ExitCode::SUCCESS
}

/// `handoff isolate keeper`.
fn keeper(name: &str, args: &[OsString]) -> ExitCode {
    match handoff_isolation::keeper::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{name} (keeper): {error}");
            ExitCode::from(126)
        }
    }
}

/// `handoff isolate outer|inner`: applies the confinement, then becomes the run's program.
fn launch(name: &str, args: &[OsString]) -> ExitCode {
    match handoff_isolation::launch::run(args) {
        Ok(never) => match never {},
        Err(error) => {
            eprintln!("{name} (launcher): {error}");
            ExitCode::from(126)
        }
    }
}
