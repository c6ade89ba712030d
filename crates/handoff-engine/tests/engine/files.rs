use handoff_engine::{EngineError, FileKind, SubmitRequest};
use handoff_task::TaskStatus;

use super::common::{agent, as_agent, git, script, start};

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
    assert_eq!(
        task.options.branch.as_deref(),
        Some(branch.as_str()),
        "named at submission"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_can_name_its_branch_and_base_and_bad_ones_are_refused_by_field() {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(repo.path().join("README"), "one\n").unwrap();
    git(repo.path(), &["add", "README"]);
    git(repo.path(), &["commit", "-q", "-m", "first"]);
    let first = git(repo.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    std::fs::write(repo.path().join("README"), "two\n").unwrap();
    git(repo.path(), &["commit", "-q", "-am", "second"]);
    let repo_path = repo.path().display().to_string();
    let h = start(&[("HANDOFF_GIT_REPOSITORY", &repo_path)]).await;
    let who = agent("a");

    let named = SubmitRequest {
        branch: Some("feature/readme-three".to_owned()),
        base: Some(first.clone()),
        ..script("cat README && echo three > README")
    };
    let id = h.engine.submit(&who, named).await.unwrap().task.id;
    assert_eq!(h.wait_done("a", &id).await.status, TaskStatus::Completed);
    assert_eq!(
        h.outputs("a", &id).await,
        ["one"],
        "it started from the base"
    );
    let parent = git(repo.path(), &["rev-parse", "feature/readme-three^"]);
    assert_eq!(parent.trim(), first);
    let readme = git(repo.path(), &["show", "feature/readme-three:README"]);
    assert_eq!(readme, "three\n");

    let refused = |branch: Option<&str>, base: Option<&str>| {
        let request = SubmitRequest {
            branch: branch.map(str::to_owned),
            base: base.map(str::to_owned),
            ..script("true")
        };
        let engine = h.engine.clone();
        let who = who.clone();
        async move {
            match engine.submit(&who, request).await {
                Err(EngineError::Invalid { field, message }) => (field, message),
                other => panic!("not refused: {other:?}"),
            }
        }
    };
    let (field, message) = refused(Some("feature/readme-three"), None).await;
    assert_eq!(
        (field, message.contains("already exists")),
        ("branch", true)
    );
    let (field, _) = refused(Some("main"), None).await;
    assert_eq!(field, "branch", "the checked-out branch is never a task's");
    let (field, _) = refused(Some("bad..name"), None).await;
    assert_eq!(field, "branch");
    let (field, _) = refused(Some("--force"), None).await;
    assert_eq!(field, "branch");
    let (field, message) = refused(None, Some("no-such-commit")).await;
    assert_eq!(field, "base");
    assert!(!message.contains("no-such-commit"), "{message}");
    let (field, _) = refused(None, Some("--all")).await;
    assert_eq!(field, "base");
    assert_eq!(
        git(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("README")).unwrap(),
        "two\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_needs_a_repository() {
    let h = start(&[]).await;
    let request = SubmitRequest {
        branch: Some("feature/x".to_owned()),
        ..script("true")
    };
    match h.engine.submit(&agent("a"), request).await {
        Err(EngineError::Invalid { field, message }) => {
            assert_eq!(field, "branch");
            assert!(message.contains("tasks.git_repository"), "{message}");
        }
        other => panic!("not refused: {other:?}"),
    }
}
