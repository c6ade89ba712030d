use handoff_engine::{EngineError, FileKind, SubmitRequest};
use handoff_task::TaskStatus;

use super::common::{agent, as_agent, script, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tools_stay_inside_the_task_directory() {
    let h = start(&[]).await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
    let text = format!(
        "mkdir -p src && echo 'fn main() {{}}' > src/main.rs && ln -s '{}' leak && ln -s /etc escape",
        outside.path().join("secret").display()
    );
    let id = h.submit("a", &text).await.task.id;
    assert_eq!(h.wait_done("a", &id).await.status, TaskStatus::Completed);

    let listing = h
        .engine
        .files(&as_agent(&agent("a")), &id, None)
        .await
        .unwrap();
    let entries: Vec<_> = listing
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.kind))
        .collect();
    assert_eq!(
        entries,
        [
            ("escape", FileKind::Symlink),
            ("leak", FileKind::Symlink),
            ("src", FileKind::Dir),
            ("src/main.rs", FileKind::File),
        ]
    );
    let chunk = h
        .engine
        .read_file(&as_agent(&agent("a")), &id, "src/main.rs", 0, None)
        .await
        .unwrap();
    assert_eq!(chunk.content.as_deref(), Some("fn main() {}\n"));

    for bad in [
        "leak",
        "escape/passwd",
        "../../etc/passwd",
        "/etc/passwd",
        "src/../../x",
    ] {
        match h
            .engine
            .read_file(&as_agent(&agent("a")), &id, bad, 0, None)
            .await
        {
            Err(EngineError::Invalid { .. }) => {}
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(
        h.engine
            .files(&as_agent(&agent("a")), &id, Some("escape"))
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caller_workdirs_must_be_inside_allowed_roots() {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let roots = root.path().display().to_string();
    let h = start(&[("HANDOFF_WORKDIR_ROOTS", &roots)]).await;
    let inside = h
        .engine
        .submit(
            &agent("a"),
            SubmitRequest {
                workdir: Some(repo.display().to_string()),
                ..script("pwd > where.txt")
            },
        )
        .await
        .unwrap();
    assert_eq!(
        h.wait_done("a", &inside.task.id).await.status,
        TaskStatus::Completed
    );
    let written = std::fs::read_to_string(repo.join("where.txt")).unwrap();
    assert_eq!(
        written.trim(),
        repo.canonicalize().unwrap().display().to_string()
    );

    let outside = tempfile::tempdir().unwrap();
    let refused = h
        .engine
        .submit(
            &agent("a"),
            SubmitRequest {
                workdir: Some(outside.path().display().to_string()),
                ..script("true")
            },
        )
        .await;
    assert!(matches!(
        refused,
        Err(EngineError::Invalid {
            field: "workdir",
            ..
        })
    ));
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_directories_can_be_worktrees_of_a_repository() {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::write(repo.path().join("README"), "hello\n").unwrap();
    git(repo.path(), &["add", "README"]);
    git(repo.path(), &["commit", "-q", "-m", "first"]);
    let repo_path = repo.path().display().to_string();
    let h = start(&[
        ("HANDOFF_GIT_REPOSITORY", &repo_path),
        ("HANDOFF_TASK_RETENTION_DAYS", "0"),
    ])
    .await;
    let task = h
        .submit(
            "a",
            "cat README && echo change >> README && git status --porcelain",
        )
        .await
        .task;
    assert_eq!(
        h.wait_done("a", &task.id).await.status,
        TaskStatus::Completed
    );
    assert_eq!(h.outputs("a", &task.id).await, ["hello", " M README"]);
    assert!(git(repo.path(), &["worktree", "list"]).contains(task.id.as_str()));
    assert_eq!(
        std::fs::read_to_string(repo.path().join("README")).unwrap(),
        "hello\n",
        "the repository's own checkout is untouched"
    );
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
    assert_eq!(git(repo.path(), &["log", "--format=%s"]).trim(), "first");

    // The task's own branch holds one commit of what its run changed: by the executor,
    // committed by Handoff, titled by the task, naming it.
    let short: String = task.id.as_str()["task_".len()..].chars().take(8).collect();
    let branch = format!("handoff/{short}-cat-readme-echo-change-readme-git-status");
    let log = git(
        repo.path(),
        &["log", "-1", "--format=%an|%cn|%s|%b", &branch],
    );
    let (who, message) = log.split_at(log.find('|').unwrap());
    assert_eq!(who, "command", "{log}");
    assert!(
        message.starts_with("|Handoff|cat README && echo change"),
        "{log}"
    );
    assert!(
        message.contains(&format!("Handoff-Task: {}", task.id)),
        "{log}"
    );
    assert!(message.contains("Handoff-Executor: command"), "{log}");
    let changed = git(repo.path(), &["show", "--format=", "--stat", &branch]);
    assert!(changed.contains("README | 1 +"), "{changed}");
    let history = h
        .engine
        .history(&as_agent(&agent("a")), &task.id, 0, 1000, false)
        .await
        .unwrap();
    let committed = history
        .events
        .iter()
        .find(|e| e.data.get("commit").is_some())
        .expect("the commit is in the task's history");
    assert_eq!(committed.data["branch"], branch.as_str());

    assert_eq!(h.engine.purge_expired().await.unwrap(), 1);
    assert!(!git(repo.path(), &["worktree", "list"]).contains(task.id.as_str()));
    assert!(!std::path::Path::new(&task.workdir).exists());
    assert!(
        git(repo.path(), &["branch", "--list", &branch]).contains(&branch),
        "the branch outlives the task's directory"
    );
}
