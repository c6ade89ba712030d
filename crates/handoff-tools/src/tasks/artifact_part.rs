//! `get_task_history` with `artifact`: one stored output read from a byte offset, in a part
//! that ends where a line ends and is sized so the pipeline's output cap passes it whole. A
//! large diff is paged this way without a byte of it cut, and without a copy of it spilled to
//! disk on every read.

use std::io::SeekFrom;

use handoff_policy::output::{Limits, fits};
use handoff_protocol::tasks::{ARTIFACT_VIEW_BYTES, ArtifactView};
use handoff_task::{Artifact, ArtifactBody};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

/// Lines kept free in a part for the text around it (headline, range, next call).
const TEXT_LINES: usize = 8;
/// A part is not made smaller than this to fit: only a result whose other fields alone nearly
/// fill the cap (a huge task description) gets here, and it is capped as any result is.
const SMALLEST_PART: usize = 1024;

/// Reads at most `max` bytes of `body` from `offset` (fewer at its end).
pub(crate) async fn read_at(
    body: &ArtifactBody,
    offset: u64,
    max: u64,
) -> std::io::Result<Vec<u8>> {
    match body {
        ArtifactBody::Inline(bytes) => {
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            let end = start
                .saturating_add(usize::try_from(max).unwrap_or(usize::MAX))
                .min(bytes.len());
            Ok(bytes[start..end].to_vec())
        }
        ArtifactBody::File(path) => {
            let mut file = tokio::fs::File::open(path).await?;
            file.seek(SeekFrom::Start(offset)).await?;
            let mut part = Vec::new();
            file.take(max).read_to_end(&mut part).await?;
            Ok(part)
        }
    }
}

/// How many bytes of `bytes` to show: the most whole lines within `max_bytes` and `max_lines`.
/// `to_end`: `bytes` run to the output's end, whose last line needs no newline. A first line
/// longer than that is cut at a character boundary instead, so every part moves on.
pub(crate) fn line_prefix(bytes: &[u8], max_bytes: usize, max_lines: usize, to_end: bool) -> usize {
    let limit = bytes.len().min(max_bytes);
    let mut end = 0;
    let mut lines = 0;
    for (at, byte) in bytes[..limit].iter().enumerate() {
        if *byte == b'\n' {
            lines += 1;
            end = at + 1;
            if lines == max_lines {
                return end;
            }
        }
    }
    // The unterminated last line of the output is a whole line.
    if to_end && limit == bytes.len() && end < limit && lines < max_lines {
        return limit;
    }
    if end > 0 {
        return end;
    }
    char_boundary(bytes, limit)
}

/// The largest character boundary of `bytes` at or before `at`, but at least one character.
fn char_boundary(bytes: &[u8], at: usize) -> usize {
    let continuation = |i: usize| bytes.get(i).is_some_and(|b| b & 0xC0 == 0x80);
    let mut cut = at.min(bytes.len());
    while cut > 0 && continuation(cut) {
        cut -= 1;
    }
    if cut == 0 && !bytes.is_empty() {
        // One character at least: its leading byte and its continuation bytes.
        cut = 1;
        while continuation(cut) {
            cut += 1;
        }
    }
    cut
}

/// `artifact`'s bytes `part` (read from `offset`, up to [`ARTIFACT_VIEW_BYTES`]) as the view of
/// the largest start of it that passes `limits` whole; `render` gives the structured result
/// and the text a view would be sent in. Uncapped (`None`): the part cut at a line end.
pub(crate) fn fitted(
    artifact: &Artifact,
    offset: u64,
    part: &[u8],
    limits: Option<Limits>,
    render: impl Fn(&ArtifactView) -> (Value, String),
) -> ArtifactView {
    let to_end = (part.len() as u64) < ARTIFACT_VIEW_BYTES
        || offset.saturating_add(part.len() as u64) >= artifact.size;
    let Some(limits) = limits else {
        let len = line_prefix(part, part.len(), usize::MAX, to_end);
        return view(artifact, offset, part, len, to_end);
    };
    let max_lines = limits.field.max_lines.saturating_sub(TEXT_LINES).max(1);
    let mut max_bytes = part.len();
    loop {
        let len = line_prefix(part, max_bytes, max_lines, to_end);
        let shown = view(artifact, offset, part, len, to_end);
        let (value, text) = render(&shown);
        let passes = fits(&value, limits) && fits(&Value::String(text), limits);
        // Each round cuts a quarter: a few rounds from 64 KiB to any cap.
        let smaller = len - len / 4;
        if passes || len <= SMALLEST_PART || smaller >= len {
            return shown;
        }
        max_bytes = smaller;
    }
}

/// The view of `part[..len]`, read from `offset`; `to_end`: `part` runs to the output's end.
fn view(artifact: &Artifact, offset: u64, part: &[u8], len: usize, to_end: bool) -> ArtifactView {
    let end = offset.saturating_add(len as u64);
    let next_offset = (len < part.len() || !to_end).then_some(end);
    ArtifactView {
        kind: artifact.kind,
        size: artifact.size,
        capped: artifact.capped,
        content: String::from_utf8_lossy(&part[..len]).into_owned(),
        truncated: next_offset.is_some(),
        diff_stat: None,
        offset: Some(offset),
        next_offset,
    }
}

#[cfg(test)]
mod tests {
    use handoff_policy::output::Cap;
    use handoff_task::{ArtifactKind, TaskId};
    use serde_json::json;

    use super::*;

    fn artifact(bytes: &[u8]) -> Artifact {
        Artifact {
            task_id: TaskId::parse("task_aaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap(),
            kind: ArtifactKind::Diff,
            size: bytes.len() as u64,
            capped: false,
            body: ArtifactBody::Inline(bytes.to_vec()),
            created_at: 0,
        }
    }

    fn limits(max_bytes: usize, max_lines: usize) -> Limits {
        Limits {
            field: Cap {
                max_lines,
                max_bytes,
                ..Cap::default()
            },
            total_bytes: max_bytes,
        }
    }

    /// What the tool sends: the view in a result, its content in the text.
    fn render(view: &ArtifactView) -> (Value, String) {
        let value = json!({"task": {"task_id": "task_x"}, "artifacts": [view]});
        (
            value,
            format!("Stored diff, from {:?}:\n{}", view.offset, view.content),
        )
    }

    /// Every part of `bytes`, paged as a client pages them.
    fn pages(bytes: &[u8], limits: Option<Limits>) -> Vec<ArtifactView> {
        let whole = artifact(bytes);
        let mut offset = 0;
        let mut parts = Vec::new();
        loop {
            let start = usize::try_from(offset).unwrap();
            let end = (start + ARTIFACT_VIEW_BYTES as usize).min(bytes.len());
            let part = fitted(&whole, offset, &bytes[start..end], limits, render);
            let next = part.next_offset;
            parts.push(part);
            match next {
                Some(next) => offset = next,
                None => return parts,
            }
        }
    }

    #[test]
    fn parts_end_at_line_ends_and_join_to_the_whole() {
        let diff: String = (0..20_000)
            .map(|i| format!("+line {i} \"quoted\"\t\\\n"))
            .collect();
        let caps = limits(50 * 1024, 2000);
        let parts = pages(diff.as_bytes(), Some(caps));
        assert!(parts.len() > 5, "{}", parts.len());
        let mut joined = String::new();
        for part in &parts {
            assert_eq!(part.offset, Some(joined.len() as u64));
            assert!(part.content.ends_with('\n'));
            let (value, text) = render(part);
            assert!(fits(&value, caps) && fits(&Value::String(text), caps));
            joined.push_str(&part.content);
        }
        assert_eq!(joined, diff);
        assert_eq!(parts.last().unwrap().next_offset, None);
        assert!(!parts.last().unwrap().truncated && parts[0].truncated);
    }

    #[test]
    fn many_short_lines_are_paged_by_lines() {
        let diff = "+\n".repeat(10_000);
        let parts = pages(diff.as_bytes(), Some(limits(50 * 1024, 100)));
        assert!(
            parts
                .iter()
                .all(|p| p.content.lines().count() <= 100 - TEXT_LINES)
        );
        assert_eq!(
            parts.iter().map(|p| p.content.len()).sum::<usize>(),
            diff.len()
        );
    }

    #[test]
    fn a_line_longer_than_a_part_is_cut_between_characters() {
        let diff = format!("{}\nend", "é".repeat(40_000));
        let parts = pages(diff.as_bytes(), Some(limits(20 * 1024, 2000)));
        assert!(parts.len() >= 4);
        let joined: String = parts.iter().map(|p| p.content.as_str()).collect();
        assert_eq!(joined, diff);
        assert!(parts.iter().all(|p| !p.content.contains('\u{FFFD}')));
        assert!(parts.last().unwrap().content.ends_with("\nend"));
    }

    #[test]
    fn uncapped_parts_are_the_whole_window_cut_at_a_line_end() {
        let diff = "x".repeat(100) + "\n" + &"y".repeat(70_000);
        let parts = pages(diff.as_bytes(), None);
        assert_eq!(parts[0].content.len(), 101);
        assert_eq!(parts.len(), 3);
    }

    #[test]
    fn prefixes_count_lines_and_the_unterminated_end() {
        assert_eq!(line_prefix(b"ab\ncd\nef", 100, 10, true), 8);
        assert_eq!(line_prefix(b"ab\ncd\nef", 100, 10, false), 6);
        assert_eq!(line_prefix(b"ab\ncd\nef", 100, 1, true), 3);
        assert_eq!(line_prefix(b"ab\ncd\nef", 5, 10, true), 3);
        assert_eq!(line_prefix(b"abcdef", 4, 10, false), 4);
        assert_eq!(line_prefix("éé".as_bytes(), 3, 10, false), 2);
        assert_eq!(line_prefix("é".as_bytes(), 1, 10, false), 2);
        assert_eq!(line_prefix(b"", 10, 10, true), 0);
    }
}
