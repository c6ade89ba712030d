//! Every relative link in README.md, BENCHMARKS.md and the Markdown under docs/ (the
//! benchmark history in docs/benchmarks/ too) points at a file that exists and, with a
//! `#fragment`, at a heading in it (GitHub's anchor rules).
#![allow(clippy::unwrap_used)]

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md"), root().join("BENCHMARKS.md")];
    let mut pages = Vec::new();
    markdown_under(&root().join("docs"), &mut pages);
    pages.sort();
    docs.extend(pages);
    docs
}

/// The `.md` files in `dir` and its subdirectories.
fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_under(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            out.push(path);
        }
    }
}

/// The text outside fenced code blocks and inline code spans, line by line.
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                kept.push_str(part);
            }
        }
        out.push(kept);
    }
    out
}

/// The targets of `[text](target)` links.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchors for the headings of a Markdown file.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

fn check(doc: &Path, target: &str) -> Result<(), String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return Ok(());
    }
    let (file, fragment) = match target.split_once('#') {
        Some((file, fragment)) => (file, Some(fragment)),
        None => (target, None),
    };
    let path = if file.is_empty() {
        doc.to_path_buf()
    } else {
        doc.parent().unwrap().join(file)
    };
    if !path.exists() {
        return Err(format!("{target}: no such file"));
    }
    if let Some(fragment) = fragment {
        if path.extension().is_none_or(|ext| ext != "md") {
            return Err(format!(
                "{target}: a fragment into a file that is not Markdown"
            ));
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if !anchors(&text).contains(fragment) {
            return Err(format!("{target}: no heading with anchor #{fragment}"));
        }
    }
    Ok(())
}

#[test]
fn docs_links_resolve() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for target in links(&text) {
            checked += 1;
            if let Err(problem) = check(&doc, &target) {
                broken.push(format!("{}: {problem}", doc.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_follow_github() {
    let found = anchors("# A `[server]` b\n## Handoff's tools\n## x\n## x\n```\n# not\n```\n");
    let expected: BTreeSet<String> = ["a-server-b", "handoffs-tools", "x", "x-1"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(found, expected);
}
