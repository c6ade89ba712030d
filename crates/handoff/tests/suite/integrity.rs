//! Verification integrity end to end (the real binary, the real OpenCode, the scripted model):
//! a coder that overwrites the verify script so it passes is not completed and the check shows
//! the script's diff, and so is one that rewrites the Makefile target the check runs; a coder
//! that deletes the tests so the runner runs none (exit 0) is not completed; a verify command
//! sleeping past the task's deadline is killed at the deadline with nothing left running, and
//! the task does not end `completed`.

use std::path::{Path, PathBuf};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    completion::{Scripted, completion, judged_env, scripted},
    executors::{AGENT, OPENCODE, events, wait_end},
    harness::{Server, start},
    mcp::{calls, task_id},
    wait::{PATIENCE, wait_until},
};

pub(super) fn bash(command: &str) -> Value {
    json!({"tool_calls": [{"name": "bash", "arguments": {"command": command, "description": "scripted step"}}]})
}

pub(super) fn write(file: &str, content: &str) -> Value {
    json!({"tool_calls": [{"name": "write", "arguments": {"filePath": format!("{{{{cwd}}}}/{file}"), "content": content}}]})
}

fn script() -> Script {
    let script = json!({
        "scenarios": [
            {"match": "TAMPER-SCRIPT", "turns": [write("check.sh", "exit 0\n"), {"text": "Done: the check passes now."}]},
            {"match": "TAMPER-MAKE", "turns": [write("Makefile", "check:\n\ttrue\n"), {"text": "Done: make check passes."}]},
            {"match": "DELETE-TESTS", "turns": [bash("rm tests/test_calc.py"), {"text": "Done: no failing tests left."}]},
            {"match": "SLOW-CHECK", "turns": [write("notes.txt", "notes\n"), {"text": "Done."}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// Handoff on OpenCode and the scripted model (as coder and judge), taking task directories
/// under the returned folder (`<state>/projects`).
pub(super) fn with_projects(model: &ScriptedModel, state: &Path) -> (PathBuf, Server) {
    let roots = state.join("projects");
    std::fs::create_dir_all(&roots).unwrap();
    let mut env = judged_env(&OPENCODE, model, state);
    env.push((
        "HANDOFF_WORKDIR_ROOTS".to_owned(),
        roots.canonicalize().unwrap().display().to_string(),
    ));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    (roots, start(&env))
}

/// A caller-chosen task directory under `roots` holding `files`.
pub(super) fn project(roots: &Path, name: &str, files: &[(&str, &str)]) -> String {
    let dir = roots.join(name);
    for (file, content) in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir.canonicalize().unwrap().display().to_string()
}

/// Whether `pid` still runs (a zombie counts as gone).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// The failed check named `name` of a completion, its detail.
pub(super) fn failed_check(done: &Value, name: &str) -> String {
    let check = done["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no `{name}` check: {done:#}"));
    assert_eq!(check["passed"], false, "{done:#}");
    check["detail"].as_str().unwrap().to_owned()
}

#[test]
fn tampered_checks_empty_test_runs_and_checks_past_the_deadline_are_not_completed() {
    let Scripted {
        runtime,
        state,
        model,
    } = scripted(script());
    let (roots, server) = with_projects(&model, state.path());

    let tamper = project(
        &roots,
        "tamper",
        &[("check.sh", "test \"$(cat answer.txt)\" = 42\n")],
    );
    let make = project(
        &roots,
        "make",
        &[("Makefile", "check:\n\ttest \"$$(cat answer.txt)\" = 42\n")],
    );
    let failing_test = "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 3)\n";
    let zero = project(&roots, "zero", &[("tests/test_calc.py", failing_test)]);
    let checks = |commands: &[&str]| json!({"policy": "checks", "max_cycles": 1, "verify_commands": commands});
    let submitted = calls(
        &server,
        AGENT,
        json!([
            {"name": "execute_task", "arguments": {"task_description": "TAMPER-SCRIPT: make check.sh pass", "workdir": tamper, "completion": checks(&["sh check.sh"])}},
            {"name": "execute_task", "arguments": {"task_description": "TAMPER-MAKE: make `make check` pass", "workdir": make, "completion": checks(&["make check"])}},
            {"name": "execute_task", "arguments": {"task_description": "DELETE-TESTS: make the tests pass", "workdir": zero, "completion": checks(&["python3 -m unittest discover -s tests"])}},
            {"name": "execute_task", "arguments": {"task_description": "SLOW-CHECK: write notes", "timeout_ms": 75000,
                "completion": checks(&["sleep 300 & echo $! > verify.pid; wait"])}}
        ]),
    );
    let (tampered, remade, emptied, slow) = (
        task_id(&submitted[0]),
        task_id(&submitted[1]),
        task_id(&submitted[2]),
        task_id(&submitted[3]),
    );

    // (a) The verify script was overwritten so it passes: not completed, its diff shown.
    let end = wait_end(&server, &tampered);
    assert_eq!(
        end["status"],
        "failed",
        "{end}\n{:#?}",
        events(&server, &tampered)
    );
    let done = completion(&server, &tampered);
    let detail = failed_check(&done, "protected files");
    assert!(
        detail.contains("check.sh")
            && detail.contains("-test \"$(cat answer.txt)\" = 42")
            && detail.contains("+exit 0"),
        "{detail}"
    );
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("check.sh") && reason.contains("+exit 0"),
        "{reason}"
    );

    // (a') The Makefile target the check runs was rewritten so it passes: caught the same way.
    let end = wait_end(&server, &remade);
    assert_eq!(
        end["status"],
        "failed",
        "{end}\n{:#?}",
        events(&server, &remade)
    );
    let done = completion(&server, &remade);
    let detail = failed_check(&done, "protected files");
    assert!(
        detail.contains("Makefile") && detail.contains("+\ttrue"),
        "{detail}"
    );

    // (b) The tests were deleted: unittest ran 0 tests and exited 0, which is not a pass.
    let end = wait_end(&server, &emptied);
    assert_eq!(
        end["status"],
        "failed",
        "{end}\n{:#?}",
        events(&server, &emptied)
    );
    let done = completion(&server, &emptied);
    assert_eq!(done["checks"][0]["passed"], false, "{done:#}");
    assert!(
        done["checks"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("exited 0 but unittest ran 0 tests"),
        "{done:#}"
    );

    // (c) The check sleeps past the task's 75 s deadline (room for a slow OpenCode start): killed at it, nothing left running.
    let end = wait_end(&server, &slow);
    let dir = super::executors::workdir(&server, &slow);
    assert!(
        matches!(end["status"].as_str(), Some("timeout" | "failed")),
        "{end}\n{:#?}",
        events(&server, &slow)
    );
    let pid: i32 = std::fs::read_to_string(dir.join("verify.pid"))
        .unwrap_or_else(|e| {
            panic!(
                "the verify command never ran ({e}): {end}\n{:#?}",
                events(&server, &slow)
            )
        })
        .trim()
        .parse()
        .unwrap();
    wait_until(
        &format!("the verify command's process {pid} to end with the task"),
        PATIENCE,
        || !running(pid),
    );
    let took = end["duration_ms"].as_i64().unwrap_or(i64::MAX);
    assert!(
        took < 90_000,
        "the task ended {took} ms after it started, long after its deadline: {end}"
    );

    drop(server);
    runtime.block_on(model.shutdown());
}
