//! A task on the caller's own repository, delivered and continued, end to end: the real
//! `opencode acp` (sandboxed, pooled, as a new user gets it) against the scripted model works in
//! a worktree of the caller's git work tree on a branch of the task's own; `push` delivery
//! sends each completed round to a real remote (a bare repository served by `git daemon` on
//! loopback) and runs the operator's after-push command; a follow-up continues the finished
//! task with a second commit on the same branch. The caller's checkout is never touched.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command},
    time::Duration,
};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    acp::{as_a_new_user, git, wait_pool_ready},
    executors::{AGENT, OPENCODE, events, require_ripgrep, status, wait_end},
    mcp::{call, ok, task_id},
    wait::wait_until,
};

/// A `git daemon` serving `base` read-write on a free loopback port, stopped on drop.
struct GitDaemon {
    child: Child,
    port: u16,
}

impl GitDaemon {
    fn start(base: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // `git daemon` runs `git-daemon` as a child of its own: started directly, the daemon
        // is the process this test stops.
        let exec_path = Command::new("git").arg("--exec-path").output().unwrap();
        let exec_path = String::from_utf8_lossy(&exec_path.stdout).trim().to_owned();
        let child = Command::new(Path::new(&exec_path).join("git-daemon"))
            .args([
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .spawn()
            .expect("git daemon runs (Debian's git ships it)");
        let daemon = Self { child, port };
        wait_until("git daemon listening", Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        daemon
    }

    fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The scripted model: the first round writes `hello.txt`; the follow-up round — recognised
/// only by the previous answer and the follow-up request in its prompt — adds a line.
fn script() -> Script {
    let write =
        |file: &str, content: &str| json!({"tool_calls": [(OPENCODE.write_call)(file, content)]});
    let script = json!({
        "scenarios": [
            {"match": "Your answer at the end of the last round:\nCreated hello.txt.", "turns": [
                write("hello.txt", "hello from the agent\na second line, as asked\n"),
                {"text": "Added a second line."}
            ]},
            {"match": "CREATE-FILE", "turns": [write("hello.txt", "hello from the agent\n"), {"text": "Created hello.txt."}]}
        ],
        "default": {"text": "No scenario matched: the script's default reply, nothing to change"},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// The caller's project (one commit on `main`, an uncommitted file) with `origin` at `remote`.
fn project(root: &Path, remote: &str) -> PathBuf {
    let repo = root.join("project");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    std::fs::write(repo.join("draft.txt"), "the user's uncommitted work\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    git(&repo, &["remote", "add", "origin", remote]);
    git(&repo, &["push", "-q", "origin", "main"]);
    repo
}

/// The environment the after-push command saw in `round`, as `NAME=value` lines.
fn hook_env(hooks: &Path, round: u32) -> String {
    std::fs::read_to_string(hooks.join(format!("round-{round}.env")))
        .unwrap_or_else(|e| panic!("the after-push command of round {round} ran: {e}"))
}

/// Everything the user can see of their checkout: branch, commit, status and files.
fn checkout(repo: &Path) -> (String, String, String, Vec<(String, String)>) {
    let mut files: Vec<(String, String)> = std::fs::read_dir(repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    files.sort();
    (
        git(repo, &["rev-parse", "--abbrev-ref", "HEAD"]),
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["status", "--porcelain"]),
        files,
    )
}

#[test]
fn a_task_on_the_callers_repository_is_pushed_and_a_follow_up_adds_a_commit() {
    require_ripgrep();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let roots = tempfile::tempdir().unwrap();
    let served = tempfile::tempdir().unwrap();
    git(
        served.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let daemon = GitDaemon::start(served.path());
    let remote = served.path().join("remote.git");
    let repo = project(
        &roots.path().canonicalize().unwrap(),
        &daemon.url("remote.git"),
    );
    let before = checkout(&repo);
    let hooks = tempfile::tempdir().unwrap();
    let hook = format!(
        "env | grep '^HANDOFF_' | sort > '{0}'/round-$HANDOFF_ROUND.env && \
         cp \"$HANDOFF_ANSWER_FILE\" '{0}'/answer-$HANDOFF_ROUND.txt && \
         echo https://forge.example/pr/$HANDOFF_ROUND",
        hooks.path().display()
    );

    let model_log = state.path().join("model.jsonl");
    let model = runtime
        .block_on(ScriptedModel::start(script(), Some(model_log.clone())))
        .unwrap();
    let roots_env = roots.path().canonicalize().unwrap().display().to_string();
    let server = as_a_new_user(
        &model,
        state.path(),
        &[
            ("HANDOFF_WORKDIR_ROOTS", &roots_env),
            ("HANDOFF_DELIVERY", "push"),
            ("HANDOFF_AFTER_PUSH", &hook),
        ],
    );
    wait_pool_ready(&server);

    // Round one, in a worktree of the caller's repository.
    let id = task_id(&call(
        &server,
        AGENT,
        "execute_task",
        json!({
            "task_description": "CREATE-FILE please",
            "workdir": repo.display().to_string(),
            "completion": {"policy": "none"}
        }),
    ));
    let done = wait_end(&server, &id);
    assert_eq!(done["status"], "completed", "{done}");
    let branch = done["branch"]
        .as_str()
        .expect("a branch of its own")
        .to_owned();
    assert!(branch.starts_with("handoff/"), "{branch}");
    assert_ne!(
        done["workdir"],
        repo.display().to_string(),
        "not the caller's checkout"
    );
    assert_eq!(done["delivery"]["state"], "delivered", "{done}");
    let range = format!("main..{branch}");
    let on_remote = || git(&remote, &["log", "--format=%an|%s", &range]);
    assert_eq!(on_remote().trim(), "opencode-acp|CREATE-FILE please");
    let env = hook_env(hooks.path(), 1);
    for line in [
        format!("HANDOFF_BRANCH={branch}"),
        "HANDOFF_REMOTE=origin".to_owned(),
        format!("HANDOFF_TASK_ID={id}"),
        "HANDOFF_TASK_TITLE=CREATE-FILE please".to_owned(),
        "HANDOFF_ROUND=1".to_owned(),
        format!("HANDOFF_REPOSITORY={}", repo.display()),
    ] {
        assert!(env.lines().any(|l| l == line), "{line} in {env}");
    }
    let answer = std::fs::read_to_string(hooks.path().join("answer-1.txt")).unwrap();
    assert_eq!(answer, "Created hello.txt.");
    assert_eq!(
        done["delivery"]["hook_output"],
        json!(["https://forge.example/pr/1"])
    );

    // The follow-up: the same task, a second round, a second commit on the same branch.
    let sent = ok(&call(
        &server,
        AGENT,
        "send_task_message",
        json!({"task_id": id, "message": "ADD-LINE: add a second line to hello.txt"}),
    ))
    .clone();
    let note = sent["note"].as_str().unwrap();
    assert!(note.contains("follow-up round 2"), "{sent}");
    let again = wait_round_end(&server, &id, 2);
    assert_eq!(again["status"], "completed", "{again}");
    assert_eq!(again["branch"], branch.as_str());
    assert_eq!(again["delivery"]["state"], "delivered", "{again}");
    assert_eq!(
        on_remote().lines().collect::<Vec<_>>(),
        [
            "opencode-acp|CREATE-FILE please (round 2)",
            "opencode-acp|CREATE-FILE please"
        ]
    );
    assert_eq!(
        git(&remote, &["show", &format!("{branch}:hello.txt")]),
        "hello from the agent\na second line, as asked\n"
    );
    assert!(
        hook_env(hooks.path(), 2)
            .lines()
            .any(|l| l == "HANDOFF_ROUND=2")
    );
    let rounds: Vec<Value> = events(&server, &id)
        .into_iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("follow-up round 2 from"))
        })
        .collect();
    assert_eq!(rounds.len(), 1, "{rounds:#?}");

    // The model saw the previous round's answer and the request in the second round's prompt.
    let log = std::fs::read_to_string(&model_log).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("ADD-LINE")
                && l.contains("Your answer at the end of the last round")),
        "the follow-up prompt reached the model"
    );

    // The user's side: the same branch checked out, at the same commit, the same files.
    assert_eq!(checkout(&repo), before);
    assert!(!repo.join("hello.txt").exists());
    drop(server);
    runtime.block_on(model.shutdown());
}

/// Waits until task `id` has ended its round `round`; its status.
fn wait_round_end(server: &super::harness::Server, id: &str, round: u64) -> Value {
    wait_until(
        &format!("round {round} of {id} ended"),
        Duration::from_secs(240),
        || {
            let now = status(server, id);
            let ended = ["completed", "failed", "timeout", "cancelled"]
                .contains(&now["status"].as_str().unwrap_or_default());
            (ended && now["round"].as_u64() == Some(round)).then_some(now)
        },
    )
}
