use super::*;

/// Snapshots under `root` with limits no ordinary test reaches.
fn roomy(root: PathBuf) -> Snapshots {
    Snapshots::new(
        root,
        SizeLimits {
            max_file: 1 << 20,
            max_bytes: 16 << 20,
        },
        Duration::from_secs(60),
    )
}

#[tokio::test]
async fn diff_shows_added_changed_and_removed_files_and_leaves_the_directory_alone() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("keep.txt"), "one\n").unwrap();
    std::fs::write(work.path().join("gone.txt"), "bye\n").unwrap();
    let snapshots = roomy(data.path().join("snapshots"));
    let task = TaskId::generate().unwrap();
    snapshots.baseline(&task, work.path()).await.unwrap();
    assert!(
        !work.path().join(".git").exists(),
        "the task directory is not touched"
    );

    std::fs::write(work.path().join("keep.txt"), "one\ntwo\n").unwrap();
    std::fs::remove_file(work.path().join("gone.txt")).unwrap();
    std::fs::write(work.path().join("new.txt"), "hello\n").unwrap();
    let diff = snapshots
        .diff(&task, work.path(), None)
        .await
        .unwrap()
        .unwrap();
    assert!(diff.contains("+two"), "{diff}");
    assert!(
        diff.contains("deleted file mode") && diff.contains("-bye"),
        "{diff}"
    );
    assert!(
        diff.contains("new file mode") && diff.contains("+hello"),
        "{diff}"
    );
    snapshots.discard(&task).await;
    assert!(
        !snapshots.git_dir(&task).exists(),
        "the baseline is forgotten"
    );
}

#[tokio::test]
async fn every_diff_is_against_the_pre_run_baseline_until_it_is_discarded() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("old.txt"), "old\n").unwrap();
    let snapshots = roomy(data.path().join("snapshots"));
    let task = TaskId::generate().unwrap();
    snapshots.baseline(&task, work.path()).await.unwrap();

    std::fs::write(work.path().join("a.txt"), "a\n").unwrap();
    let first = snapshots
        .diff(&task, work.path(), None)
        .await
        .unwrap()
        .unwrap();
    assert!(first.contains("+a"), "{first}");
    assert_eq!(
        snapshots
            .diff(&task, work.path(), None)
            .await
            .unwrap()
            .as_deref(),
        Some(first.as_str()),
        "diffing again sees the same changes"
    );

    std::fs::write(work.path().join("b.txt"), "b\n").unwrap();
    let second = snapshots
        .diff(&task, work.path(), None)
        .await
        .unwrap()
        .unwrap();
    assert!(
        second.contains("a.txt") && second.contains("b.txt"),
        "the second diff covers both cycles: {second}"
    );
    assert!(!second.contains("old.txt"), "{second}");

    snapshots.discard(&task).await;
    assert!(!snapshots.git_dir(&task).exists());
    assert_eq!(
        snapshots.diff(&task, work.path(), None).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn changes_to_selected_files_are_reported_with_their_own_diff() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("check.sh"), "exit 1\n").unwrap();
    std::fs::create_dir(work.path().join("tests")).unwrap();
    std::fs::write(work.path().join("tests/test_a.py"), "assert False\n").unwrap();
    std::fs::write(work.path().join("calc.py"), "x = 1\n").unwrap();
    let snapshots = roomy(data.path().to_path_buf());
    let task = TaskId::generate().unwrap();
    let none = snapshots
        .changed_since_baseline(&task, work.path(), |_| true)
        .await
        .unwrap();
    assert_eq!(none, None, "no baseline, nothing to compare");
    snapshots.baseline(&task, work.path()).await.unwrap();

    std::fs::write(work.path().join("check.sh"), "exit 0\n").unwrap();
    std::fs::remove_file(work.path().join("tests/test_a.py")).unwrap();
    std::fs::write(work.path().join("calc.py"), "x = 2\n").unwrap();
    let protected = |p: &str| p == "check.sh" || p.starts_with("tests/");
    let changed = snapshots
        .changed_since_baseline(&task, work.path(), protected)
        .await
        .unwrap()
        .unwrap();
    let names: Vec<&str> = changed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["check.sh", "tests/test_a.py"]);
    assert!(changed[0].1.contains("-exit 1") && changed[0].1.contains("+exit 0"));
    assert!(
        changed[1].1.contains("deleted file mode"),
        "{}",
        changed[1].1
    );
    assert!(!changed[0].1.contains("calc.py"));
    assert!(snapshots.git_dir(&task).exists(), "the baseline is kept");
}

#[tokio::test]
async fn nothing_changed_is_no_diff() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let snapshots = roomy(data.path().to_path_buf());
    let task = TaskId::generate().unwrap();
    snapshots.baseline(&task, work.path()).await.unwrap();
    assert_eq!(
        snapshots.diff(&task, work.path(), None).await.unwrap(),
        None
    );
}

/// Bytes under `dir`, recursively.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                bytes_under(&entry.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

fn limited(root: PathBuf, max_file: u64, max_bytes: u64) -> Snapshots {
    Snapshots::new(
        root,
        SizeLimits {
            max_file,
            max_bytes,
        },
        Duration::from_secs(60),
    )
}

// With 1 GiB written in a task directory the data dir briefly held a 1 GiB copy: a file over
// the limit is described, never copied, and the diff names it.
#[tokio::test]
async fn large_files_are_listed_in_the_diff_and_never_copied() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let big = vec![b'x'; 5 << 20];
    std::fs::write(work.path().join("kept.bin"), &big).unwrap();
    std::fs::write(work.path().join("grows.bin"), &big).unwrap();
    std::fs::write(work.path().join("gone.bin"), &big).unwrap();
    std::fs::write(work.path().join("small.txt"), "one\n").unwrap();
    let snapshots = limited(data.path().join("snapshots"), 1 << 20, 64 << 20);
    let task = TaskId::generate().unwrap();
    snapshots.baseline(&task, work.path()).await.unwrap();

    std::fs::write(work.path().join("new.bin"), &big).unwrap();
    std::fs::write(work.path().join("grows.bin"), vec![b'y'; 6 << 20]).unwrap();
    std::fs::remove_file(work.path().join("gone.bin")).unwrap();
    std::fs::write(work.path().join("small.txt"), "one\ntwo\n").unwrap();
    let diff = snapshots
        .diff(&task, work.path(), None)
        .await
        .unwrap()
        .unwrap();
    assert!(
        diff.contains("+two"),
        "small files are still diffed: {diff}"
    );
    for line in [
        "# large file added: new.bin, 5242880 bytes",
        "# large file changed: grows.bin, 6291456 bytes (was 5242880)",
        "# large file deleted: gone.bin, was 5242880 bytes",
    ] {
        assert!(diff.contains(line), "{line} missing from {diff}");
    }
    assert!(
        !diff.contains("kept.bin"),
        "an unchanged large file is not listed"
    );
    let copied = bytes_under(&snapshots.git_dir(&task));
    assert!(copied < 1 << 20, "{copied} bytes in the snapshot");
}

#[tokio::test]
async fn a_small_file_that_grows_large_and_the_byte_budget_are_listed_too() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("log.txt"), "start\n").unwrap();
    let snapshots = limited(data.path().join("snapshots"), 1000, 1500);
    let task = TaskId::generate().unwrap();
    snapshots.baseline(&task, work.path()).await.unwrap();

    std::fs::write(work.path().join("log.txt"), vec![b'l'; 2000]).unwrap();
    std::fs::write(work.path().join("a.txt"), vec![b'a'; 800]).unwrap();
    std::fs::write(work.path().join("b.txt"), vec![b'b'; 800]).unwrap();
    let diff = snapshots
        .diff(&task, work.path(), None)
        .await
        .unwrap()
        .unwrap();
    assert!(
        diff.contains("# large file changed: log.txt, 2000 bytes"),
        "{diff}"
    );
    assert!(diff.contains("+++ b/a.txt"), "{diff}");
    assert!(
        diff.contains("# file beyond the snapshot budget added: b.txt, 800 bytes"),
        "{diff}"
    );
    let protected = snapshots
        .changed_since_baseline(&task, work.path(), |p| p == "log.txt")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(protected.len(), 1);
    assert!(
        protected[0].1.starts_with("# large file changed"),
        "{protected:?}"
    );
}

// The diff of a 1 GiB directory ran 62 s past a 20 s deadline: a diff ends at its time, and
// one given up midway leaves the baseline usable.
#[tokio::test]
async fn a_diff_out_of_time_gives_up_and_the_next_one_works() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let snapshots = roomy(data.path().join("snapshots"));
    let task = TaskId::generate().unwrap();
    snapshots.baseline(&task, work.path()).await.unwrap();
    std::fs::write(work.path().join("a.txt"), "a\n").unwrap();

    let err = snapshots
        .diff(&task, work.path(), Some(Instant::now()))
        .await
        .unwrap_err();
    assert!(err.starts_with("given up after"), "{err}");
    // As if git had been killed holding its lock.
    std::fs::write(snapshots.git_dir(&task).join("index.lock"), "").unwrap();
    let diff = snapshots
        .diff(&task, work.path(), None)
        .await
        .unwrap()
        .unwrap();
    assert!(diff.contains("+a"), "{diff}");
}

#[tokio::test]
async fn pipes_and_sockets_are_passed_over() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let snapshots = roomy(data.path().join("snapshots"));
    let task = TaskId::generate().unwrap();
    snapshots.baseline(&task, work.path()).await.unwrap();
    nix::unistd::mkfifo(&work.path().join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::write(work.path().join("a.txt"), "a\n").unwrap();
    let diff = snapshots
        .diff(&task, work.path(), None)
        .await
        .unwrap()
        .unwrap();
    assert!(diff.contains("+a") && !diff.contains("pipe"), "{diff}");
}

#[tokio::test]
async fn files_the_task_wrote_under_ignored_paths_are_in_the_diff_dependencies_are_not() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(root.join(".gitignore"), "build/\nnode_modules/\n*.log\n").unwrap();
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(root.join("build/old.txt"), "from before\n").unwrap();
    let snapshots = roomy(data.path().join("snapshots"));
    let task = TaskId::generate().unwrap();
    snapshots.baseline(&task, root).await.unwrap();
    assert_eq!(snapshots.diff(&task, root, None).await.unwrap(), None);

    std::fs::write(root.join("build/report.txt"), "the report\n").unwrap();
    std::fs::create_dir_all(root.join("node_modules/dep")).unwrap();
    std::fs::write(root.join("node_modules/dep/index.js"), "dep\n").unwrap();
    std::fs::write(root.join("run.log"), "logged\n").unwrap();
    let diff = snapshots.diff(&task, root, None).await.unwrap().unwrap();
    assert!(
        diff.contains("b/build/report.txt") && diff.contains("+the report"),
        "{diff}"
    );
    assert!(diff.contains("+logged"), "{diff}");
    assert!(
        !diff.contains("node_modules") && !diff.contains("old.txt"),
        "{diff}"
    );
    // Taken in once, the file is compared like any other from then on.
    std::fs::write(root.join("build/report.txt"), "the report, revised\n").unwrap();
    let diff = snapshots.diff(&task, root, None).await.unwrap().unwrap();
    assert!(diff.contains("+the report, revised"), "{diff}");
    let changed = snapshots
        .changed_since_baseline(&task, root, |p| p.starts_with("build/"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0].0, "build/report.txt");
}
