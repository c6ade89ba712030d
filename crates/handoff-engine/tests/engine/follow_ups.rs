//! Follow-up rounds and delivery: a message to a finished task runs it again in the same
//! worktree, on the same branch, with a commit of its own; with `push` delivery each completed
//! round's branch reaches the remote and the after-push command runs with its environment.

use std::path::Path;

use handoff_engine::EngineError;
use handoff_task::{MessageType, TaskStatus};

use super::common::{PATIENCE, agent, as_agent, git, start, wait_until};

/// A repository with one commit on `main` and a bare `origin` next to it.
fn repository(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (repo, remote) = (root.join("repo"), root.join("remote.git"));
    std::fs::create_dir(&repo).unwrap();
    git(root, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&repo, &["push", "-q", "origin", "main"]);
    (repo, remote)
}

// Round one writes `notes.txt`; any later round appends to it.
const WORK: &str = "[ -f notes.txt ] && echo two >> notes.txt || echo one > notes.txt; exit 0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_runs_again_on_the_same_branch_and_each_round_is_pushed() {
    let root = tempfile::tempdir().unwrap();
    let (repo, remote) = repository(root.path());
    let hooks = root.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    let hook = format!(
        "env | grep '^HANDOFF_' | sort > '{}'/round-$HANDOFF_ROUND.env && echo pr-$HANDOFF_ROUND",
        hooks.display()
    );
    let h = start(&[
        ("HANDOFF_GIT_REPOSITORY", repo.to_str().unwrap()),
        ("HANDOFF_DELIVERY", "push"),
        ("HANDOFF_AFTER_PUSH", &hook),
    ])
    .await;
    let owner = as_agent(&agent("a"));
    let id = h.submit("a", WORK).await.task.id;
    let first = h.wait_done("a", &id).await;
    assert_eq!(first.status, TaskStatus::Completed);
    let branch = first.options.branch.clone().unwrap();
    let pushed = |dir: &Path| git(dir, &["log", "--format=%s", &format!("main..{branch}")]);
    assert_eq!(pushed(&remote).lines().count(), 1, "round one pushed");

    // An approval answers nothing on a finished task; a message continues it.
    let refused = h
        .engine
        .message(&owner, &id, MessageType::Approval, "allow".into(), None)
        .await
        .unwrap_err();
    assert!(matches!(refused, EngineError::Conflict(_)), "{refused}");
    let receipt = h
        .engine
        .message(
            &owner,
            &id,
            MessageType::Update,
            "and a second line".into(),
            None,
        )
        .await
        .unwrap();
    assert!(!receipt.delivered);
    assert!(
        receipt.note.contains("follow-up round 2"),
        "{}",
        receipt.note
    );
    assert!(receipt.note.contains(&branch), "{}", receipt.note);
    assert_eq!(receipt.task.status, TaskStatus::Queued);
    let second = h.wait_done("a", &id).await;
    assert_eq!(second.status, TaskStatus::Completed);
    assert_eq!(second.options.round, 2);
    assert_eq!(second.workdir, first.workdir, "the same directory");

    // Two commits on the task's branch, both pushed; the file holds both rounds' work.
    let titles = pushed(&repo);
    assert_eq!(titles.lines().count(), 2, "{titles}");
    assert!(
        titles.lines().next().unwrap().ends_with("(round 2)"),
        "{titles}"
    );
    assert_eq!(
        git(&remote, &["rev-parse", &branch]),
        git(&repo, &["rev-parse", &branch])
    );
    assert_eq!(
        git(&repo, &["show", &format!("{branch}:notes.txt")]),
        "one\ntwo\n"
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    for round in ["1", "2"] {
        let env = std::fs::read_to_string(hooks.join(format!("round-{round}.env"))).unwrap();
        for line in [
            format!("HANDOFF_BRANCH={branch}"),
            "HANDOFF_REMOTE=origin".to_owned(),
            format!("HANDOFF_TASK_ID={id}"),
            format!("HANDOFF_ROUND={round}"),
            format!("HANDOFF_REPOSITORY={}", repo.display()),
        ] {
            assert!(env.lines().any(|l| l == line), "{line} in {env}");
        }
        assert!(env.contains("HANDOFF_ANSWER_FILE="), "{env}");
    }
    let history = h.engine.history(&owner, &id, 0, 1000, false).await.unwrap();
    let said: Vec<&str> = history.events.iter().map(|e| e.message.as_str()).collect();
    assert!(
        said.iter()
            .any(|m| m.starts_with("follow-up round 2 from a")),
        "{said:#?}"
    );
    let delivered: Vec<&str> = history
        .events
        .iter()
        .filter_map(|e| e.data.get("delivery")?.get("state")?.as_str())
        .collect();
    assert_eq!(delivered, ["pushed", "delivered", "pushed", "delivered"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_push_is_said_on_the_task_and_the_round_still_completes() {
    let root = tempfile::tempdir().unwrap();
    let (repo, remote) = repository(root.path());
    std::fs::remove_dir_all(&remote).unwrap();
    let h = start(&[
        ("HANDOFF_GIT_REPOSITORY", repo.to_str().unwrap()),
        ("HANDOFF_DELIVERY", "push"),
    ])
    .await;
    let id = h.submit("a", WORK).await.task.id;
    assert_eq!(h.wait_done("a", &id).await.status, TaskStatus::Completed);
    let history = h
        .engine
        .history(&as_agent(&agent("a")), &id, 0, 1000, false)
        .await
        .unwrap();
    let failed = history
        .events
        .iter()
        .find(|e| e.data.get("delivery").is_some())
        .expect("the delivery is said");
    assert_eq!(failed.data["delivery"]["state"], "push_failed");
    assert!(
        failed.message.starts_with("could not push"),
        "{}",
        failed.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_left_to_continue_is_refused_by_name() {
    let h = start(&[("HANDOFF_WORKDIR_CLEANUP", "on_completion")]).await;
    let id = h.submit("a", WORK).await.task.id;
    let done = h.wait_done("a", &id).await;
    assert_eq!(done.status, TaskStatus::Completed);
    // The directory goes right after the task is settled.
    let dir = Path::new(&done.workdir);
    wait_until("the task directory to go", PATIENCE, async || {
        if dir.exists() {
            Err(dir.display().to_string())
        } else {
            Ok(())
        }
    })
    .await;
    let refused = h
        .engine
        .message(
            &as_agent(&agent("a")),
            &id,
            MessageType::Update,
            "more".into(),
            None,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("cannot continue"), "{refused}");
    assert!(refused.contains("workdir_cleanup"), "{refused}");
}
