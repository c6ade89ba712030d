//! Capping a structured tool result: each long string is cut (command output from its tail,
//! anything else from its head) with a notice naming the spilled full text; if the whole
//! result is still over its byte cap, the largest strings are cut further and, last, the
//! largest arrays lose trailing items. No tool result leaves larger than the cap.

use serde::Serialize;
use serde_json::Value;

use super::{
    spill::SpillDir,
    truncate::{Cap, Direction, truncate},
};

/// Caps for one tool's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The cap on each string.
    pub field: Cap,
    /// The cap on the whole serialized result.
    pub total_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        let field = Cap::default();
        Self {
            field,
            total_bytes: field.max_bytes,
        }
    }
}

/// One cut made to a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Truncation {
    /// JSON pointer of the cut value.
    pub pointer: String,
    /// Its size before cutting (bytes of text, or serialized bytes of an array).
    pub original_bytes: usize,
    /// Its lines before cutting (0 for an array).
    pub original_lines: usize,
    /// The spill file holding the full value, when it could be written.
    pub spill_id: Option<String>,
}

// Room kept for the notice inside a cut string.
const NOTICE_BYTES: usize = 300;
// Below this a string is not worth cutting further.
const MIN_LEAF: usize = 1024;

/// Caps `value`; returns the capped value and the cuts made. `spill` gives the directory the
/// full text of a cut goes to, and is asked only when something is cut.
pub fn limit_value(
    mut value: Value,
    limits: Limits,
    spill: &dyn Fn() -> SpillDir,
) -> (Value, Vec<Truncation>) {
    // Most results are small: prove nothing would be cut without copying a string (the slow
    // path below clones every leaf and builds its pointer).
    if fits(&value, limits) {
        return (value, Vec::new());
    }
    let mut leaves = Vec::new();
    collect_leaves(&value, String::new(), None, &mut leaves);
    let mut cuts: Vec<Truncation> = Vec::new();
    let mut budgets: Vec<(Cap, usize)> = leaves
        .iter()
        .map(|leaf| {
            let mut cap = limits.field;
            if leaf.shell_like {
                cap.direction = Direction::Tail;
            }
            (cap, leaf.text.len())
        })
        .collect();

    for (i, leaf) in leaves.iter().enumerate() {
        let (cap, _) = budgets[i];
        if let Some(text) = cut_leaf(leaf, cap, spill, &mut cuts) {
            budgets[i].1 = text.len();
            set(&mut value, &leaf.pointer, Value::String(text));
        }
    }
    // Still over: halve the largest string until it fits or nothing large is left.
    while serialized_len(&value) > limits.total_bytes {
        let Some((i, _)) = budgets
            .iter()
            .enumerate()
            .filter(|(_, (_, len))| *len > MIN_LEAF)
            .max_by_key(|(_, (_, len))| *len)
        else {
            break;
        };
        let (mut cap, len) = budgets[i];
        cap.max_bytes = (len / 2).max(MIN_LEAF / 2);
        if let Some(text) = cut_leaf(&leaves[i], cap, spill, &mut cuts) {
            budgets[i] = (cap, text.len());
            set(&mut value, &leaves[i].pointer, Value::String(text));
        } else {
            break;
        }
    }
    if serialized_len(&value) > limits.total_bytes {
        drop_array_items(&mut value, limits.total_bytes, spill, &mut cuts);
    }
    (value, cuts)
}

/// Whether [`limit_value`] would return `value` as it is: nothing cut, nothing spilled. A tool
/// that pages on its own sizes its pages with it.
pub fn fits(value: &Value, limits: Limits) -> bool {
    !any_leaf_over(value, leaf_budget(limits.field)) && serialized_len(value) <= limits.total_bytes
}

struct Leaf {
    pointer: String,
    text: String,
    shell_like: bool,
}

fn collect_leaves(value: &Value, pointer: String, key: Option<&str>, out: &mut Vec<Leaf>) {
    match value {
        Value::String(text) => out.push(Leaf {
            pointer,
            text: text.clone(),
            shell_like: key.is_some_and(is_shell_like),
        }),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_leaves(item, format!("{pointer}/{i}"), key, out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                collect_leaves(v, format!("{pointer}/{escaped}"), Some(k), out);
            }
        }
        _ => {}
    }
}

/// The cap [`cut_leaf`] cuts a leaf to: room is kept for the notice.
fn leaf_budget(cap: Cap) -> Cap {
    Cap {
        max_bytes: cap.max_bytes.saturating_sub(NOTICE_BYTES).max(1),
        ..cap
    }
}

/// Whether any string in `value` is over `budget` — exactly when [`truncate`] would cut it.
fn any_leaf_over(value: &Value, budget: Cap) -> bool {
    match value {
        // A text of at most `max_lines` bytes cannot have more lines: no count needed.
        Value::String(text) => {
            text.len() > budget.max_bytes
                || (text.len() > budget.max_lines
                    && text.split_inclusive('\n').count() > budget.max_lines)
        }
        Value::Array(items) => items.iter().any(|item| any_leaf_over(item, budget)),
        Value::Object(map) => map.values().any(|item| any_leaf_over(item, budget)),
        _ => false,
    }
}

/// Output of commands ends with what matters (errors), so it keeps its tail.
fn is_shell_like(key: &str) -> bool {
    ["output", "stdout", "stderr", "log", "tail"]
        .iter()
        .any(|word| key.contains(word))
}

/// Cuts one leaf from its original text; records (and spills) the first cut of each leaf.
fn cut_leaf(
    leaf: &Leaf,
    cap: Cap,
    spill: &dyn Fn() -> SpillDir,
    cuts: &mut Vec<Truncation>,
) -> Option<String> {
    let cut = truncate(&leaf.text, leaf_budget(cap));
    if !cut.truncated {
        return None;
    }
    let spill_id = match cuts.iter().find(|c| c.pointer == leaf.pointer) {
        Some(earlier) => earlier.spill_id.clone(),
        None => {
            let id = spill().write(&leaf.text).map(|f| f.id).ok();
            cuts.push(Truncation {
                pointer: leaf.pointer.clone(),
                original_bytes: cut.original_bytes,
                original_lines: cut.original_lines,
                spill_id: id.clone(),
            });
            id
        }
    };
    let notice = notice(
        cut.original_bytes - cut.text.len(),
        cut.original_bytes,
        cut.original_lines,
        spill_id.as_deref(),
    );
    Some(match cap.direction {
        Direction::Tail => format!("{notice}\n{}", cut.text),
        Direction::Head | Direction::HeadTail => format!("{}\n{notice}", cut.text),
    })
}

fn notice(
    cut_bytes: usize,
    original_bytes: usize,
    original_lines: usize,
    spill: Option<&str>,
) -> String {
    let rest = match spill {
        Some(id) => format!("the full text is tool output {id} (read it with read_tool_output)"),
        None => "the full text could not be kept".to_owned(),
    };
    format!(
        "[… truncated: {cut_bytes} of {original_bytes} bytes ({original_lines} lines) cut; {rest}]"
    )
}

fn set(value: &mut Value, pointer: &str, new: Value) {
    if let Some(slot) = value.pointer_mut(pointer) {
        *slot = new;
    }
}

fn serialized_len(value: &Value) -> usize {
    let mut counter = ByteCounter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Counts serialized bytes without keeping them.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Last resort: trailing items of the largest arrays go (the whole result is spilled once).
fn drop_array_items(
    value: &mut Value,
    total: usize,
    spill: &dyn Fn() -> SpillDir,
    cuts: &mut Vec<Truncation>,
) {
    let original_bytes = serialized_len(value);
    let spill_id = serde_json::to_string(value)
        .ok()
        .and_then(|json| spill().write(&json).ok())
        .map(|f| f.id);
    loop {
        let size = serialized_len(value);
        if size <= total {
            break;
        }
        let Some(pointer) = largest_array(value, String::new()).map(|(p, _)| p) else {
            break;
        };
        let Some(Value::Array(items)) = value.pointer_mut(&pointer) else {
            break;
        };
        // Drop enough trailing items to cover the excess, then measure again.
        let mut freed = 0;
        while freed < size - total {
            let Some(item) = items.pop() else { break };
            freed += serialized_len(&item) + 1;
        }
        if !cuts.iter().any(|c| c.pointer == pointer) {
            cuts.push(Truncation {
                pointer,
                original_bytes,
                original_lines: 0,
                spill_id: spill_id.clone(),
            });
        }
    }
}

fn largest_array(value: &Value, pointer: String) -> Option<(String, usize)> {
    let mut best: Option<(String, usize)> = None;
    let mut consider = |candidate: Option<(String, usize)>| {
        if let Some((p, size)) = candidate
            && best.as_ref().is_none_or(|(_, b)| size > *b)
        {
            best = Some((p, size));
        }
    };
    match value {
        Value::Array(items) => {
            if !items.is_empty() {
                consider(Some((pointer.clone(), serialized_len(value))));
            }
            for (i, item) in items.iter().enumerate() {
                consider(largest_array(item, format!("{pointer}/{i}")));
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                consider(largest_array(v, format!("{pointer}/{escaped}")));
            }
        }
        _ => {}
    }
    best
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn small() -> Limits {
        Limits {
            field: Cap {
                max_lines: 50,
                max_bytes: 2000,
                direction: Direction::Head,
            },
            total_bytes: 6000,
        }
    }

    #[test]
    fn small_results_pass_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let value = json!({"a": "short", "n": 3});
        let (out, cuts) = limit_value(value.clone(), small(), &|| SpillDir::under(dir.path()));
        assert_eq!(out, value);
        assert!(cuts.is_empty());
    }

    #[test]
    fn the_quick_check_agrees_with_truncate_at_the_edges() {
        let budget = leaf_budget(small().field);
        let texts = [
            "x".repeat(budget.max_bytes),
            "x".repeat(budget.max_bytes + 1),
            "\n".repeat(budget.max_lines),
            "\n".repeat(budget.max_lines + 1),
            "ab\n".repeat(budget.max_lines),
            "ab\n".repeat(budget.max_lines) + "c",
        ];
        for text in texts {
            let over = any_leaf_over(&json!({ "deep": [text.clone()] }), budget);
            assert_eq!(
                over,
                truncate(&text, budget).truncated,
                "{} bytes",
                text.len()
            );
        }
    }

    #[test]
    fn fits_is_exactly_nothing_cut() {
        let dir = tempfile::tempdir().unwrap();
        let budget = leaf_budget(small().field).max_bytes;
        let values = [
            json!({"a": "x".repeat(budget)}),
            json!({"a": "x".repeat(budget + 1)}),
            json!({"a": "\n".repeat(60)}),
            json!({"a": "x".repeat(budget), "b": "x".repeat(budget), "c": "x".repeat(budget)}),
            json!({"a": "\"".repeat(budget / 2), "b": "\"".repeat(budget / 2)}),
        ];
        for value in values {
            let (_, cuts) = limit_value(value.clone(), small(), &|| SpillDir::under(dir.path()));
            assert_eq!(fits(&value, small()), cuts.is_empty(), "{value}");
        }
    }

    #[test]
    fn many_short_lines_are_cut_though_the_bytes_fit() {
        let dir = tempfile::tempdir().unwrap();
        let value = json!({ "log": "a\n".repeat(200) });
        let (_, cuts) = limit_value(value, small(), &|| SpillDir::under(dir.path()));
        assert_eq!(cuts.len(), 1);
        assert_eq!(cuts[0].original_lines, 200);
    }

    #[test]
    fn long_output_keeps_its_tail_and_names_the_spill() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::under(dir.path());
        let text: String = (1..=500).map(|i| format!("line {i}\n")).collect();
        let (out, cuts) = limit_value(json!({"output": text, "summary": text}), small(), &|| {
            spill.clone()
        });
        let output = out["output"].as_str().unwrap();
        assert!(output.starts_with("[… truncated"), "{output}");
        assert!(output.ends_with("line 500\n"));
        let summary = out["summary"].as_str().unwrap();
        assert!(summary.starts_with("line 1\n"));
        assert_eq!(cuts.len(), 2);
        let id = cuts[0].spill_id.clone().unwrap();
        assert!(output.contains(&id));
        let page = spill.read(&id, 0, 1 << 20, usize::MAX).unwrap();
        assert_eq!(page.text, text);
        assert!(serde_json::to_vec(&out).unwrap().len() <= small().total_bytes);
    }

    #[test]
    fn no_result_leaves_over_the_total_cap() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::under(dir.path());
        let many_strings = json!({"events": (0..40).map(|i| json!({"id": i, "text": "y".repeat(1500)})).collect::<Vec<_>>()});
        let many_items = json!({"ids": (0..5000).collect::<Vec<_>>()});
        for value in [many_strings, many_items] {
            let (out, cuts) = limit_value(value, small(), &|| spill.clone());
            assert!(serde_json::to_vec(&out).unwrap().len() <= small().total_bytes);
            assert!(!cuts.is_empty());
        }
    }
}
