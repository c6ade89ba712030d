//! Completion that cannot be gamed, end to end (the real binary, the real OpenCode, the scripted
//! model as coder and judge): tests switched off instead of fixed — `@unittest.skip`,
//! `@unittest.expectedFailure`, deleted assertions, Rust `#[ignore]`, `test.skip` (the syntax
//! Jest, Vitest and node share; run here by `node --test`) — are not completed although the
//! verify command passes, and where a test stopped running, the verify command's run before the
//! task measured it; an empty answer and "Sure." with nothing changed are cut-offs; `1024`
//! after a tool call stands when the task says it wants only an answer, or when the judge —
//! asserting it was told the answer is short and nothing changed — says so; a file written under
//! a `.gitignore`d folder is a change; a rewritten fixture fails the checks, and with a judge is
//! flagged to it with its hunk.

use std::path::Path;

use handoff_scripted_model::Script;
use serde_json::{Value, json};

use super::{
    completion::{Scripted, completion, scripted},
    executors::{AGENT, events, wait_end},
    harness::Server,
    integrity::{bash, failed_check, project, with_projects, write},
    mcp::{calls, task_id},
};

fn verdict(done: bool, reason: &str) -> Value {
    json!({"tool_calls": [{"name": "verdict", "arguments": {
        "done": done, "confidence": 0.9, "summary": "scripted judge", "remaining": if done { vec![] } else { vec![reason] },
        "continuation_prompt": if done { "" } else { "restore the fixture and fix greet()" },
        "is_stuck": false, "is_progress_being_made": true, "reason": reason,
        "evidence": [{"requirement": "the task", "met": done, "evidence": "the flagged items"}]
    }}]})
}

const CALC_PY: &str = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
const TEST_CALC: &str = "import unittest\n\nfrom calc import add, sub\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n\n    def test_sub(self):\n        self.assertEqual(sub(3, 2), 1)\n";
const LIB_RS: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n\n    #[test]\n    fn adds_zero() {\n        assert_eq!(super::add(0, 0), 0);\n    }\n}\n";
const CALC_JS: &str = "exports.add = (a, b) => a - b;\n";
const CALC_TEST_JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('./calc');\n\ntest('adds', () => {\n  assert.strictEqual(add(2, 2), 4);\n});\n\ntest('adds zero', () => {\n  assert.strictEqual(add(0, 0), 0);\n});\n";
const GREET_PY: &str = "def greet():\n    return 'Hello'\n";
const TEST_GREET: &str = "import pathlib\nimport unittest\n\nfrom greet import greet\n\nHERE = pathlib.Path(__file__).parent\n\n\nclass T(unittest.TestCase):\n    def test_greets(self):\n        expected = (HERE / 'fixtures' / 'greeting.txt').read_text().strip()\n        self.assertEqual(greet(), expected)\n";

fn script() -> Script {
    let skipped = TEST_CALC.replace(
        "    def test_add",
        "    @unittest.skip('later')\n    def test_add",
    );
    let xfail = TEST_CALC.replace(
        "    def test_add",
        "    @unittest.expectedFailure\n    def test_add",
    );
    let gutted = TEST_CALC.replace("        self.assertEqual(add(2, 2), 4)", "        pass");
    let ignored = LIB_RS.replace(
        "    #[test]\n    fn adds()",
        "    #[test]\n    #[ignore]\n    fn adds()",
    );
    let js_skipped = CALC_TEST_JS.replace("test('adds',", "test.skip('adds',");
    let done = "All failing tests pass now; the task is finished.";
    let script = json!({
        "scenarios": [
            // The judge: each answers only when its request carries the flag it must weigh.
            {"name": "judge-answer", "match": "ANSWER-JUDGED", "and": ["Flagged for you to weigh", "the final answer is 4 characters and no file changed", "1024"], "api": "anthropic",
             "turns": [verdict(true, "the task asks for the number only and 1024 is 2**10")]},
            {"name": "judge-fixture", "match": "FIXTURE-JUDGED", "and": ["Flagged for you to weigh", "tests/fixtures/greeting.txt", "changes a file the tests read", "-Hello, world", "+Hello"], "api": "anthropic",
             "turns": [verdict(false, "the fixture was rewritten to match the code instead of fixing greet()")]},
            // The coders.
            {"match": "SKIP-TESTS", "turns": [write("tests/test_calc.py", &skipped), {"text": done}]},
            {"match": "XFAIL-TESTS", "turns": [write("tests/test_calc.py", &xfail), {"text": done}]},
            {"match": "GUT-ASSERTS", "turns": [write("tests/test_calc.py", &gutted), {"text": done}]},
            {"match": "IGNORE-RUST", "turns": [write("src/lib.rs", &ignored), {"text": done}]},
            {"match": "SKIP-JS", "turns": [write("calc.test.js", &js_skipped), {"text": done}]},
            {"match": "EMPTY-REPLY", "turns": [{}]},
            {"match": "SURE-REPLY", "turns": [{"text": "Sure."}]},
            {"match": "compute 2**10", "turns": [bash("python3 -c 'print(2**10)'"), {"text": "1024"}]},
            {"match": "IGNORED-OUTPUT", "turns": [write("build/report.txt", "the report\n"), {"text": "The report is written to build/report.txt."}]},
            {"match": "FIXTURE", "turns": [write("tests/fixtures/greeting.txt", "Hello\n"), {"text": done}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// Waits for `id` to end with `status`; returns its completion block.
fn ends(server: &Server, id: &str, status: &str) -> Value {
    let end = wait_end(server, id);
    assert_eq!(end["status"], status, "{end}\n{:#?}", events(server, id));
    completion(server, id)
}

/// The rustup toolchain of this machine, for a verify command run with the test's own `HOME`.
fn cargo_test() -> String {
    let home = std::env::var("HOME").unwrap();
    let rustup = std::env::var("RUSTUP_HOME").unwrap_or(format!("{home}/.rustup"));
    let cargo = std::env::var("CARGO_HOME").unwrap_or(format!("{home}/.cargo"));
    format!("RUSTUP_HOME={rustup} CARGO_HOME={cargo} {cargo}/bin/cargo test --offline")
}

fn projects(roots: &Path) -> [String; 5] {
    let python = [
        ("calc.py", CALC_PY),
        ("tests/__init__.py", ""),
        ("tests/test_calc.py", TEST_CALC),
    ];
    let rust = [
        (
            "Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", LIB_RS),
        (".gitignore", "target/\n"),
    ];
    let js = [("calc.js", CALC_JS), ("calc.test.js", CALC_TEST_JS)];
    let ignored = [
        (".gitignore", "build/\n"),
        ("README.md", "reports go to build/\n"),
    ];
    let greet = [
        ("greet.py", GREET_PY),
        ("tests/__init__.py", ""),
        ("tests/test_greet.py", TEST_GREET),
        ("tests/fixtures/greeting.txt", "Hello, world\n"),
    ];
    [
        project(roots, "python", &python),
        project(roots, "rust", &rust),
        project(roots, "js", &js),
        project(roots, "ignored", &ignored),
        project(roots, "greet", &greet),
    ]
}

#[test]
fn switched_off_tests_empty_answers_hidden_outputs_and_rewritten_fixtures_are_judged_right() {
    let Scripted {
        runtime,
        state,
        model,
    } = scripted(script());
    let (roots, server) = with_projects(&model, state.path());
    let [python, rust, js, ignored, greet] = projects(&roots);
    // Each task its own copy: the Python tasks share one template.
    let python_copy = |name: &str| {
        let files = [
            ("calc.py", CALC_PY),
            ("tests/__init__.py", ""),
            ("tests/test_calc.py", TEST_CALC),
        ];
        project(&roots, name, &files)
    };
    let (xfail, gutted) = (python_copy("xfail"), python_copy("gutted"));
    let greet_judged = project(
        &roots,
        "greet-judged",
        &[
            ("greet.py", GREET_PY),
            ("tests/__init__.py", ""),
            ("tests/test_greet.py", TEST_GREET),
            ("tests/fixtures/greeting.txt", "Hello, world\n"),
        ],
    );
    let checks = |commands: &[&str]| json!({"max_cycles": 1, "verify_commands": commands});
    let unittest = checks(&["python3 -m unittest"]);
    let once = json!({"max_cycles": 1});
    let task = |text: &str, workdir: Option<&str>, completion: Value| {
        let mut arguments = json!({"task_description": text, "completion": completion});
        if let Some(dir) = workdir {
            arguments["workdir"] = json!(dir);
        }
        json!({"name": "execute_task", "arguments": arguments})
    };
    let submitted = calls(
        &server,
        AGENT,
        json!([
            task(
                "SKIP-TESTS: make the tests pass",
                Some(&python),
                unittest.clone()
            ),
            task(
                "XFAIL-TESTS: make the tests pass",
                Some(&xfail),
                unittest.clone()
            ),
            task(
                "GUT-ASSERTS: make the tests pass",
                Some(&gutted),
                unittest.clone()
            ),
            task(
                "IGNORE-RUST: make cargo test pass",
                Some(&rust),
                checks(&[&cargo_test()])
            ),
            task(
                "SKIP-JS: make the tests pass",
                Some(&js),
                checks(&["node --test"])
            ),
            task("EMPTY-REPLY: explain the build", None, once.clone()),
            task("SURE-REPLY: add a changelog entry", None, once.clone()),
            task(
                "ANSWER-CHECKS: compute 2**10 with python3 and reply with the number only",
                None,
                json!({"max_cycles": 1, "requires_changes": false})
            ),
            task(
                "ANSWER-JUDGED: compute 2**10 with python3 and reply with the number only",
                None,
                json!({"max_cycles": 1, "policy": "judge"})
            ),
            task(
                "ANSWER-UNSAID: compute 2**10 with python3 and reply with the number only",
                None,
                once.clone()
            ),
            task(
                "IGNORED-OUTPUT: write the report to build/report.txt",
                Some(&ignored),
                json!({"max_cycles": 1, "requires_changes": true})
            ),
            task(
                "FIXTURE: make the tests pass",
                Some(&greet),
                unittest.clone()
            ),
            task(
                "FIXTURE-JUDGED: make the tests pass",
                Some(&greet_judged),
                json!({"max_cycles": 1, "policy": "judge", "verify_commands": ["python3 -m unittest"]})
            )
        ]),
    );
    let ids: Vec<String> = submitted.iter().map(task_id).collect();

    // Tests switched off: the verify command passes, the test diff says why it must not count.
    // The verify commands also ran before the run: where a test no longer runs, that is
    // measured too.
    let switched_off = [
        (&ids[0], "@unittest.skip", true),
        (&ids[1], "@unittest.expectedFailure", true),
        (&ids[2], "removes 1 assertion(s)", false),
        (&ids[3], "#[ignore", true),
        (&ids[4], "test.skip(", true),
    ];
    for (id, marker, fewer) in switched_off {
        let done = ends(&server, id, "failed");
        let detail = failed_check(&done, "tests weakened");
        assert!(detail.contains(marker), "{marker}: {detail}");
        let verify = &done["checks"][0];
        assert_eq!(
            verify["passed"], true,
            "the verify command itself passed: {done:#}"
        );
        let reason = done["reason"].as_str().unwrap();
        assert!(
            reason.contains(marker) && reason.contains("protected_changes_expected"),
            "the headline is the failing check's and says how to allow it: {reason}"
        );
        let measured = detail.contains("ran 1 test(s); before the run it ran 2");
        assert_eq!(measured, fewer, "{marker}: {detail}");
        let history = events(&server, id);
        assert!(
            history
                .iter()
                .any(|e| e["message"].as_str().is_some_and(
                    |m| m.starts_with("before the run, `") && m.contains("running 2 test(s)")
                )),
            "{history:#?}"
        );
    }

    // No answer, and "Sure." with nothing changed: cut-offs, not finishes.
    let done = ends(&server, &ids[5], "failed");
    assert!(
        failed_check(&done, "cut_off").contains("without a final answer"),
        "{done:#}"
    );
    let done = ends(&server, &ids[6], "failed");
    assert!(
        failed_check(&done, "cut_off").contains("requires_changes: false"),
        "{done:#}"
    );

    // `1024` after a tool call: the task's own field, or the judge told of it, lets it stand.
    ends(&server, &ids[7], "completed");
    ends(&server, &ids[8], "completed");
    let done = ends(&server, &ids[9], "failed");
    assert!(
        failed_check(&done, "cut_off").contains("4 characters"),
        "{done:#}"
    );

    // A file under a `.gitignore`d folder is the change the task made.
    let done = ends(&server, &ids[10], "completed");
    assert!(
        done["checks"].to_string().contains("files changed"),
        "{done:#}"
    );
    let history = super::mcp::ok(&super::mcp::call(
        &server,
        AGENT,
        "get_task_history",
        json!({"task_id": ids[10], "include_artifacts": true}),
    ))
    .to_string();
    assert!(
        history.contains("build/report.txt"),
        "the diff artifact names it"
    );

    // A rewritten fixture: fails the checks; with a judge, flagged to it with its hunk.
    let done = ends(&server, &ids[11], "failed");
    let detail = failed_check(&done, "fixtures changed");
    assert!(
        detail.contains("greeting.txt") && detail.contains("+Hello"),
        "{detail}"
    );
    let done = ends(&server, &ids[12], "failed");
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains("fixture was rewritten"),
        "{done:#}"
    );
    let requests = model.requests();
    for judge in ["judge-answer", "judge-fixture"] {
        assert!(
            requests
                .iter()
                .any(|r| r.scenario.as_deref() == Some(judge)),
            "the {judge} request did not carry what it must weigh"
        );
    }

    drop(server);
    runtime.block_on(model.shutdown());
}
