//! `git diff --stat` as the CLI prints it, from the counts `handoff_task::diff_stat` makes.

use handoff_protocol::{FileStat, diff_stat, tasks::ArtifactView};

/// The stat of a diff artifact: the server's, counted over the whole stored diff; else (an
/// older server) counted over the part shown.
pub fn of(artifact: &ArtifactView) -> Vec<FileStat> {
    artifact
        .diff_stat
        .clone()
        .unwrap_or_else(|| diff_stat(&artifact.content))
}

/// The stat as git prints it: ` path | N +++--` per file and a summary line.
pub fn render(files: &[FileStat]) -> String {
    if files.is_empty() {
        return " no changes".to_owned();
    }
    const BAR: u64 = 40;
    let width = files
        .iter()
        .map(|f| f.path.chars().count())
        .max()
        .unwrap_or(0);
    let most = files.iter().map(|f| f.added + f.removed).max().unwrap_or(0);
    let digits = most.to_string().len();
    let mut out = Vec::new();
    for f in files {
        if f.binary {
            out.push(format!(" {:width$} | {:>digits$}", f.path, "Bin"));
            continue;
        }
        let total = f.added + f.removed;
        let scale = |n: u64| {
            let cells = if most <= BAR {
                n
            } else {
                n.saturating_mul(BAR).div_ceil(most)
            };
            usize::try_from(cells).unwrap_or(usize::MAX)
        };
        let bar = format!(
            "{}{}",
            "+".repeat(scale(f.added)),
            "-".repeat(scale(f.removed))
        );
        out.push(format!(" {:width$} | {total:>digits$} {bar}", f.path));
    }
    let added: u64 = files.iter().map(|f| f.added).sum();
    let removed: u64 = files.iter().map(|f| f.removed).sum();
    let plural = |n: u64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut summary = format!(" {} changed", plural(files.len() as u64, "file"));
    if added > 0 || removed == 0 {
        summary.push_str(&format!(", {}(+)", plural(added, "insertion")));
    }
    if removed > 0 {
        summary.push_str(&format!(", {}(-)", plural(removed, "deletion")));
    }
    out.push(summary);
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_reads_as_git_prints_it() {
        let file = |path: &str, added, removed, binary| FileStat {
            path: path.to_owned(),
            added,
            removed,
            binary,
        };
        let files = [
            file("src/parse.rs", 3, 1, false),
            file("new file.txt", 1, 0, false),
            file("logo.png", 0, 0, true),
        ];
        assert_eq!(
            render(&files),
            " src/parse.rs | 4 +++-\n new file.txt | 1 +\n logo.png     | Bin\n \
             3 files changed, 4 insertions(+), 1 deletion(-)"
        );
        assert_eq!(render(&[]), " no changes");
    }
}
