//! Finding a program the way a shell does; used wherever a configured binary is looked up
//! (executors, the isolation's helpers, `doctor`).

use std::path::PathBuf;

/// `program` itself when it names a path, else its first match on `PATH`.
pub(crate) fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return path.is_file().then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}
