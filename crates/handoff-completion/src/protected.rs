//! The files verification relies on, which the coder must leave as they were: the verify
//! scripts themselves, the test files a runner is pointed at, the Makefile a `make` target is
//! read from, plus whatever the configuration names. Only what a command clearly references is
//! derived — a plain argument (`grep -q x src/lib.py`) may be the very file the task changes.

/// Programs whose first argument is the script they run.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "python", "python3", "node", "ruby", "perl", "php", "deno",
    "bun", "tsx", "ts-node", "bats",
];
/// Test runners whose path arguments name the tests they run.
const RUNNERS: &[&str] = &[
    "pytest", "py.test", "jest", "vitest", "mocha", "rspec", "phpunit",
];
/// Wrappers that run the command after them.
const WRAPPERS: &[&str] = &[
    "env", "exec", "time", "nice", "nohup", "command", "timeout", "npx",
];

/// The paths (relative to the task directory) that `command` reads its verdict from.
pub fn referenced_paths(command: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for segment in command.split(['\n', ';', '|', '&']) {
        let words: Vec<String> = segment
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_owned())
            .collect();
        segment_paths(&words, &mut paths);
    }
    let mut unique = Vec::new();
    for path in paths {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    unique
}

fn segment_paths(words: &[String], paths: &mut Vec<String>) {
    // Skips `VAR=value` assignments and wrappers (`timeout 60 …` and its duration too).
    let mut rest = words;
    while let Some((first, tail)) = rest.split_first() {
        let assignment = first.contains('=') && !first.starts_with('-');
        let wrapper = WRAPPERS.contains(&first.as_str());
        let operand = first.starts_with('-')
            || first
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == 's');
        if !(assignment || wrapper || (operand && rest.len() < words.len())) {
            break;
        }
        rest = tail;
    }
    let Some((program, args)) = rest.split_first() else {
        return;
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let name = program.rsplit('/').next().unwrap_or(program);
    if program.contains('/') {
        push(paths, program);
    }
    if INTERPRETERS.contains(&name) {
        interpreter(name, &args, paths);
    } else if RUNNERS.contains(&name) {
        runner_files(&args, paths);
    } else if matches!(name, "make" | "gmake") {
        make(&args, paths);
    } else if matches!(name, "just") {
        push(paths, "justfile");
        push(paths, "Justfile");
    } else if matches!(name, "npm" | "yarn" | "pnpm") {
        push(paths, "package.json");
    } else if name == "tox" {
        push(paths, "tox.ini");
    }
}

/// `python script.py`, `sh check.sh`; `python -m pytest tests/` is the runner's; `-c` is inline.
fn interpreter(name: &str, args: &[&str], paths: &mut Vec<String>) {
    let shell = matches!(name, "sh" | "bash" | "dash" | "zsh" | "ksh");
    for (i, arg) in args.iter().enumerate() {
        match *arg {
            "-c" => return,
            "-e" | "-E" | "-p" | "--eval" | "--print" if !shell => return,
            "-m" if args.get(i + 1) == Some(&"unittest") => {
                return unittest(args.get(i + 2..).unwrap_or_default(), paths);
            }
            "-m" => return runner_files(args.get(i + 2..).unwrap_or_default(), paths),
            a if a.starts_with('-') => {}
            script => return push(paths, script),
        }
    }
}

/// `python -m unittest`: `discover`'s start directory (`-s tests`), or without one the files
/// its pattern finds (`test*.py` anywhere); named modules (`test_calc`, `tests.test_calc`) as
/// their files.
fn unittest(args: &[&str], paths: &mut Vec<String>) {
    let discover = args.first() == Some(&"discover");
    let (mut start, mut pattern) = (None, "test*.py");
    let mut rest = args.get(usize::from(discover)..).unwrap_or_default();
    while let Some((arg, tail)) = rest.split_first() {
        rest = tail;
        let value = || tail.first().copied();
        match *arg {
            "-s" | "--start-directory" => start = value(),
            "-p" | "--pattern" => pattern = value().unwrap_or(pattern),
            "-t" | "--top-level-directory" => {}
            a if a.starts_with('-') => continue,
            name if discover => start = start.or(Some(name)),
            name if name.ends_with(".py") || name.contains('/') => push(paths, name),
            name => {
                let parts: Vec<&str> = name.split('.').collect();
                for end in 1..=parts.len() {
                    push(paths, &format!("{}.py", parts[..end].join("/")));
                }
            }
        }
        // An option's value is not a name.
        if arg.starts_with('-') {
            rest = rest.get(1..).unwrap_or_default();
        }
    }
    if discover {
        match start {
            Some(dir) => push(paths, dir),
            None => push(paths, &format!("**/{pattern}")),
        }
    }
}

/// A test runner's path arguments (`tests/`, `test_calc.py::test_add`).
fn runner_files(args: &[&str], paths: &mut Vec<String>) {
    for arg in args.iter().filter(|a| !a.starts_with('-')) {
        let file = arg.split("::").next().unwrap_or(arg);
        if looks_like_path(file) {
            push(paths, file);
        }
    }
}

/// The makefile: `-f FILE` / `--file=FILE`, else the names make looks for.
fn make(args: &[&str], paths: &mut Vec<String>) {
    let mut named = false;
    for (i, arg) in args.iter().enumerate() {
        let file = match *arg {
            "-f" | "--file" | "--makefile" => args.get(i + 1).copied(),
            a => a.strip_prefix("--file=").or_else(|| a.strip_prefix("-f")),
        };
        if let Some(file) = file.filter(|f| !f.is_empty()) {
            push(paths, file);
            named = true;
        }
    }
    if !named {
        for file in ["Makefile", "makefile", "GNUmakefile"] {
            push(paths, file);
        }
    }
}

fn looks_like_path(arg: &str) -> bool {
    !arg.contains("...") && (arg.contains('/') || arg.contains('.'))
}

fn push(paths: &mut Vec<String>, path: &str) {
    let path = normalise(path);
    // Outside the task directory (a system script): not the coder's to change.
    if !path.is_empty() && !path.starts_with('/') && !path.starts_with("..") {
        paths.push(path.to_owned());
    }
}

fn normalise(path: &str) -> &str {
    let mut path = path.trim();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path.trim_end_matches('/')
}

/// Whether `path` (relative, `/`-separated) is protected by `pattern`: the file itself, a file
/// under it when it names a directory, or a glob match (`*`, `?` within a name, `**` across).
pub fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, path) = (normalise(pattern), normalise(path));
    if pattern.is_empty() {
        return false;
    }
    let mut prefix = path;
    loop {
        if glob(pattern.as_bytes(), prefix.as_bytes()) {
            return true;
        }
        match prefix.rsplit_once('/') {
            Some((parent, _)) => prefix = parent,
            None => return false,
        }
    }
}

/// Whether any of `patterns` protects `path`.
pub fn is_protected(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|p| matches(p, path))
}

fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => {
            let rest = rest.strip_prefix(b"/").unwrap_or(rest);
            (0..=text.len()).any(|i| glob(rest, &text[i..]))
        }
        [b'*', rest @ ..] => (0..=text.len())
            .take_while(|&i| i == 0 || text[i - 1] != b'/')
            .any(|i| glob(rest, &text[i..])),
        [b'?', rest @ ..] => {
            matches!(text, [c, tail @ ..] if *c != b'/' && glob(rest, tail))
        }
        [c, rest @ ..] => matches!(text, [t, tail @ ..] if t == c && glob(rest, tail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_runner_paths_and_makefiles_are_derived_from_commands() {
        let cases: &[(&str, &[&str])] = &[
            ("./check.sh", &["check.sh"]),
            ("sh scripts/verify.sh --strict", &["scripts/verify.sh"]),
            ("bash -e ./run_tests.sh && echo ok", &["run_tests.sh"]),
            ("python3 test_calc.py", &["test_calc.py"]),
            (
                "python -m pytest tests/test_calc.py -q",
                &["tests/test_calc.py"],
            ),
            (
                "pytest -q tests/ test_more.py::test_one",
                &["tests", "test_more.py"],
            ),
            (
                "CI=1 timeout 60 npx jest src/calc.test.js",
                &["src/calc.test.js"],
            ),
            ("node --test test/calc.test.mjs", &["test/calc.test.mjs"]),
            ("node -e 'require(\"./calc\")'", &[]),
            ("make check", &["Makefile", "makefile", "GNUmakefile"]),
            ("make -f build.mk test", &["build.mk"]),
            ("npm test", &["package.json"]),
            ("python3 -m unittest discover -s tests", &["tests"]),
            ("python3 -m unittest discover", &["**/test*.py"]),
            (
                "python -m unittest discover -p '*_test.py'",
                &["**/*_test.py"],
            ),
            ("python3 -m unittest test_calc", &["test_calc.py"]),
            (
                "python3 -m unittest -v tests.test_calc",
                &["tests.py", "tests/test_calc.py"],
            ),
            (
                "python -m unittest tests/test_calc.py",
                &["tests/test_calc.py"],
            ),
            ("go test ./...", &[]),
            ("go test ./calc", &[]),
            ("cargo test --workspace", &[]),
            ("python -c 'import calc; assert calc.add(1, 2) == 3'", &[]),
            ("grep -q 'def add' calc.py", &[]),
            ("test -f ok.txt", &[]),
            ("/usr/local/bin/verify", &[]),
        ];
        for (command, want) in cases {
            assert_eq!(referenced_paths(command), *want, "{command}");
        }
    }

    #[test]
    fn patterns_match_files_directories_and_globs() {
        assert!(matches("check.sh", "check.sh"));
        assert!(matches("./check.sh", "check.sh"));
        assert!(!matches("check.sh", "check.sh.bak"));
        assert!(!matches("check.sh", "sub/check.sh"));
        assert!(matches("tests", "tests/test_calc.py"));
        assert!(matches("tests/", "tests/unit/test_a.py"));
        assert!(!matches("tests", "tests_old/a.py"));
        assert!(matches("tests/*.py", "tests/test_a.py"));
        assert!(!matches("tests/*.py", "tests/unit/test_a.py"));
        assert!(matches("tests/**/*.py", "tests/unit/test_a.py"));
        assert!(matches("**/test_*.py", "test_a.py"));
        assert!(matches("**/test_*.py", "pkg/tests/test_a.py"));
        assert!(matches("*.test.js", "calc.test.js"));
        assert!(!matches("*.test.js", "src/calc.test.js"));
        assert!(matches("Makefil?", "Makefile"));
        assert!(!matches("", "anything"));
        let protected = vec!["Makefile".to_owned(), "tests".to_owned()];
        assert!(is_protected(&protected, "tests/test_calc.py"));
        assert!(!is_protected(&protected, "calc.py"));
    }
}
