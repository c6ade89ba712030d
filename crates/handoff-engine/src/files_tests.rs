use super::*;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/nested")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join("src/nested/a.txt"), "héllo").unwrap();
    std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
    dir
}

#[tokio::test]
async fn refuses_traversal_absolute_and_escaping_symlinks() {
    let dir = tree();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).unwrap();
    for bad in [
        "../etc/passwd",
        "src/../../x",
        "/etc/passwd",
        "link",
        "linkdir/secret",
    ] {
        let err = read(dir.path(), bad, 0, 100).await.unwrap_err();
        assert!(matches!(err, EngineError::Invalid { .. }), "{bad}: {err}");
    }
    assert!(list(dir.path(), Some("linkdir")).await.is_err());
    assert!(list(dir.path(), Some("..")).await.is_err());
}

#[tokio::test]
async fn symlinks_inside_the_root_are_fine() {
    let dir = tree();
    std::os::unix::fs::symlink(dir.path().join("src/lib.rs"), dir.path().join("alias")).unwrap();
    let chunk = read(dir.path(), "alias", 0, 100).await.unwrap();
    assert_eq!(chunk.content.as_deref(), Some("fn main() {}\n"));
}

#[tokio::test]
async fn lists_recursively_in_path_order() {
    let dir = tree();
    let listing = list(dir.path(), None).await.unwrap();
    let paths: Vec<_> = listing.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "blob.bin",
            "src",
            "src/lib.rs",
            "src/nested",
            "src/nested/a.txt"
        ]
    );
    assert!(!listing.truncated);
    let sub = list(dir.path(), Some("src/nested")).await.unwrap();
    assert_eq!(sub.entries[0].path, "src/nested/a.txt");
    assert_eq!(sub.entries[0].size, Some(6));
}

#[tokio::test]
async fn reads_in_chunks_and_detects_binary() {
    let dir = tree();
    let first = read(dir.path(), "src/nested/a.txt", 0, 2).await.unwrap();
    // "h" + the first byte of "é": the split character is left for the next chunk.
    assert_eq!(first.content.as_deref(), Some("h"));
    assert_eq!(first.bytes_read, 1);
    assert!(first.has_more);
    let rest = read(dir.path(), "src/nested/a.txt", 1, 100).await.unwrap();
    assert_eq!(rest.content.as_deref(), Some("éllo"));
    assert!(!rest.has_more);
    let bin = read(dir.path(), "blob.bin", 0, 100).await.unwrap();
    assert!(bin.binary);
    assert_eq!(bin.content, None);
    let missing = read(dir.path(), "nope.txt", 0, 10).await.unwrap_err();
    assert!(matches!(missing, EngineError::NotFound(_)));
}
