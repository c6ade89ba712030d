//! What a snapshot copies into the private git directory: every candidate file up to the size
//! limit, while the byte budget lasts. The rest is only described — path, size, modification
//! time — and compared by those (the way git itself decides a file is unchanged); the diff
//! names each of them on a `# large file …` line instead of showing its content.

use std::{
    collections::HashSet,
    ffi::OsStr,
    os::unix::{ffi::OsStrExt, fs::MetadataExt},
    path::Path,
};

/// The size limits of one snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SizeLimits {
    /// Files larger than this are not copied.
    pub max_file: u64,
    /// Bytes copied by one snapshot at most.
    pub max_bytes: u64,
}

/// Why a file was not copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// Over the file size limit.
    Large,
    /// The snapshot's byte budget was spent.
    Budget,
}

/// A file left out of a snapshot, as it was then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Skipped {
    pub path: Vec<u8>,
    pub size: u64,
    pub mtime_ns: i128,
    pub why: Why,
}

/// What to hand to `git update-index` (NUL-separated paths), and what was left out.
#[derive(Debug, Default)]
pub(super) struct Selection {
    pub update: Vec<u8>,
    pub skipped: Vec<Skipped>,
}

/// Chooses among `candidates` (paths under `workdir`); the paths in `known` (left out of the
/// baseline) are compared on their own. Blocking: it stats every candidate.
pub(super) fn select(
    workdir: &Path,
    candidates: &[Vec<u8>],
    limits: SizeLimits,
    known: &HashSet<Vec<u8>>,
) -> Selection {
    let mut selection = Selection::default();
    let mut spent = 0u64;
    for path in candidates.iter().filter(|p| !known.contains(*p)) {
        let full = workdir.join(OsStr::from_bytes(path));
        let meta = std::fs::symlink_metadata(&full).ok();
        // Git cannot keep a pipe, socket or device (and would refuse the whole update).
        if meta
            .as_ref()
            .is_some_and(|m| !(m.is_file() || m.is_dir() || m.file_type().is_symlink()))
        {
            continue;
        }
        // A path that is gone leaves the index; links and nested repositories are small.
        if let Some(meta) = meta.filter(std::fs::Metadata::is_file) {
            let size = meta.len();
            let why = if size > limits.max_file {
                Some(Why::Large)
            } else if spent.saturating_add(size) > limits.max_bytes {
                Some(Why::Budget)
            } else {
                spent += size;
                None
            };
            if let Some(why) = why {
                selection.skipped.push(Skipped {
                    path: path.clone(),
                    size,
                    mtime_ns: mtime_ns(&meta),
                    why,
                });
                continue;
            }
        }
        selection.update.extend_from_slice(path);
        selection.update.push(0);
    }
    selection
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
}

/// The files left out of the baseline, kept beside it as `size mtime why path\0` records.
pub(super) fn encode(skipped: &[Skipped]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in skipped {
        let why = match s.why {
            Why::Large => "large",
            Why::Budget => "budget",
        };
        out.extend_from_slice(format!("{} {} {why} ", s.size, s.mtime_ns).as_bytes());
        out.extend_from_slice(&s.path);
        out.push(0);
    }
    out
}

/// Reads what [`encode`] wrote; a damaged record is skipped.
pub(super) fn decode(bytes: &[u8]) -> Vec<Skipped> {
    bytes
        .split(|&b| b == 0)
        .filter_map(|record| {
            let mut fields = record.splitn(4, |&b| b == b' ');
            let size = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
            let mtime_ns = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
            let why = match fields.next()? {
                b"large" => Why::Large,
                b"budget" => Why::Budget,
                _ => return None,
            };
            let path = fields.next().filter(|p| !p.is_empty())?.to_vec();
            Some(Skipped {
                path,
                size,
                mtime_ns,
                why,
            })
        })
        .collect()
}

/// The `# large file …` lines for files left out: those of the baseline that changed or went
/// (`baseline`), and those left out now (`now`; `added` tells new files from changed ones).
/// Blocking: it stats the baseline's files.
pub(super) fn summary(
    workdir: &Path,
    baseline: &[Skipped],
    now: &[Skipped],
    added: &HashSet<Vec<u8>>,
) -> Vec<(Vec<u8>, String)> {
    let mut lines = Vec::new();
    for old in baseline {
        let full = workdir.join(OsStr::from_bytes(&old.path));
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.len() == old.size && mtime_ns(&meta) == old.mtime_ns => {}
            Ok(meta) => lines.push(line(
                old,
                "changed",
                format!("{} bytes (was {})", meta.len(), old.size),
            )),
            Err(_) => lines.push(line(old, "deleted", format!("was {} bytes", old.size))),
        }
    }
    for new in now {
        let verb = if added.contains(&new.path) {
            "added"
        } else {
            "changed"
        };
        lines.push(line(new, verb, format!("{} bytes", new.size)));
    }
    lines
}

fn line(skipped: &Skipped, verb: &str, size: String) -> (Vec<u8>, String) {
    let what = match skipped.why {
        Why::Large => "large file",
        Why::Budget => "file beyond the snapshot budget",
    };
    let path = String::from_utf8_lossy(&skipped.path);
    (
        skipped.path.clone(),
        format!("# {what} {verb}: {path}, {size} (not copied, so not diffed)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_files_and_files_past_the_budget_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![b'a'; 10]).unwrap();
        std::fs::write(dir.path().join("big"), vec![b'b'; 100]).unwrap();
        std::fs::write(dir.path().join("c"), vec![b'c'; 10]).unwrap();
        std::fs::write(dir.path().join("d"), vec![b'd'; 5]).unwrap();
        let candidates: Vec<Vec<u8>> = ["a", "big", "c", "d", "gone"]
            .iter()
            .map(|n| n.as_bytes().to_vec())
            .collect();
        let limits = SizeLimits {
            max_file: 50,
            max_bytes: 16,
        };
        let chosen = select(dir.path(), &candidates, limits, &HashSet::new());
        assert_eq!(chosen.update, b"a\0d\0gone\0");
        let left: Vec<(&[u8], Why)> = chosen
            .skipped
            .iter()
            .map(|s| (s.path.as_slice(), s.why))
            .collect();
        assert_eq!(left, [(&b"big"[..], Why::Large), (&b"c"[..], Why::Budget)]);
        assert_eq!(decode(&encode(&chosen.skipped)), chosen.skipped);

        let known = HashSet::from([b"big".to_vec()]);
        let chosen = select(dir.path(), &candidates, limits, &known);
        assert_eq!(
            chosen.skipped.len(),
            1,
            "known files are compared on their own"
        );
    }

    #[test]
    fn left_out_files_are_reported_when_they_change_or_go() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["same", "grown", "gone"] {
            std::fs::write(dir.path().join(name), "12345").unwrap();
        }
        let all: Vec<Vec<u8>> = ["same", "grown", "gone"]
            .iter()
            .map(|n| n.as_bytes().to_vec())
            .collect();
        let limits = SizeLimits {
            max_file: 1,
            max_bytes: 100,
        };
        let baseline = select(dir.path(), &all, limits, &HashSet::new()).skipped;
        std::fs::write(dir.path().join("grown"), "1234567").unwrap();
        std::fs::remove_file(dir.path().join("gone")).unwrap();
        std::fs::write(dir.path().join("new"), "abc").unwrap();
        let now = select(dir.path(), &[b"new".to_vec()], limits, &HashSet::new()).skipped;
        let lines: Vec<String> = summary(
            dir.path(),
            &baseline,
            &now,
            &HashSet::from([b"new".to_vec()]),
        )
        .into_iter()
        .map(|(_, line)| line)
        .collect();
        assert_eq!(
            lines,
            [
                "# large file changed: grown, 7 bytes (was 5) (not copied, so not diffed)",
                "# large file deleted: gone, was 5 bytes (not copied, so not diffed)",
                "# large file added: new, 3 bytes (not copied, so not diffed)",
            ]
        );
    }
}
