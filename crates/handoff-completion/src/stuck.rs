//! The stuck detector over an executor's event stream — OpenHands' five rules: 4 identical
//! action+observation pairs; 3 identical actions each ending in an error; 3 identical agent
//! messages with nothing between; an A/B alternation over 6 steps; 10 context compactions in a
//! row. Volatile values (pids, timestamps, ids, durations) are masked before comparing.

use serde_json::Value;

/// One step of the executor's work, as the detector sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A tool call and what came back.
    Action {
        /// Tool name plus its normalized input.
        action: String,
        /// Its normalized output.
        observation: String,
        /// Whether it ended in an error.
        error: bool,
    },
    /// Text the agent wrote.
    Message(String),
    /// The executor compacted its context.
    Compaction,
}

impl Step {
    /// A tool step from its name, input and output (volatile values masked).
    pub fn action(tool: &str, input: &Value, output: &str, error: bool) -> Self {
        Step::Action {
            action: format!("{tool} {}", normalize_value(input)),
            observation: normalize_text(output),
            error,
        }
    }

    /// An agent message (volatile values masked).
    pub fn message(text: &str) -> Self {
        Step::Message(normalize_text(text.trim()))
    }
}

/// Which rule fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StuckRule {
    /// The same action got the same observation 4 times in a row.
    RepeatedActionObservation,
    /// The same action failed 3 times in a row.
    RepeatedActionError,
    /// The agent wrote the same message 3 times with nothing between.
    RepeatedMessage,
    /// Two actions alternated over 6 steps.
    Alternation,
    /// 10 context compactions in a row.
    CompactionLoop,
}

impl StuckRule {
    /// One line for the task's history.
    pub fn describe(self) -> &'static str {
        match self {
            StuckRule::RepeatedActionObservation => {
                "the same action got the same result 4 times in a row"
            }
            StuckRule::RepeatedActionError => "the same action failed 3 times in a row",
            StuckRule::RepeatedMessage => "the agent wrote the same message 3 times in a row",
            StuckRule::Alternation => "the agent alternated between two actions for 6 steps",
            StuckRule::CompactionLoop => "the context was compacted 10 times in a row",
        }
    }
}

/// Checks the steps so far (oldest first); the first rule that fires on the tail.
pub fn detect(steps: &[Step]) -> Option<StuckRule> {
    let actions: Vec<(&str, &str, bool)> = tail_actions(steps);
    if let [.., a, b, c, d] = actions.as_slice()
        && [b, c, d].iter().all(|x| (x.0, x.1) == (a.0, a.1))
    {
        return Some(StuckRule::RepeatedActionObservation);
    }
    if let [.., a, b, c] = actions.as_slice()
        && [a, b, c].iter().all(|x| x.2 && x.0 == a.0)
    {
        return Some(StuckRule::RepeatedActionError);
    }
    if let [.., Step::Message(a), Step::Message(b), Step::Message(c)] = steps
        && a == b
        && b == c
    {
        return Some(StuckRule::RepeatedMessage);
    }
    if let [.., s1, s2, s3, s4, s5, s6] = actions.as_slice() {
        let (a, b) = ((s1.0, s1.1), (s2.0, s2.1));
        if a != b
            && (s3.0, s3.1) == a
            && (s5.0, s5.1) == a
            && (s4.0, s4.1) == b
            && (s6.0, s6.1) == b
        {
            return Some(StuckRule::Alternation);
        }
    }
    let compactions = steps
        .iter()
        .rev()
        .take_while(|s| **s == Step::Compaction)
        .count();
    if compactions >= 10 {
        return Some(StuckRule::CompactionLoop);
    }
    None
}

/// The trailing run of actions: the agent's closing words after its last action are skipped
/// (a turn that ended always ends with them); a message between actions ends the run, and
/// compactions do not count.
fn tail_actions(steps: &[Step]) -> Vec<(&str, &str, bool)> {
    let mut out = Vec::new();
    let mut closing = true;
    for step in steps.iter().rev() {
        match step {
            Step::Action {
                action,
                observation,
                error,
            } => {
                closing = false;
                out.push((action.as_str(), observation.as_str(), *error));
            }
            Step::Message(text) if text.is_empty() || closing => {}
            Step::Message(_) => break,
            Step::Compaction => {}
        }
    }
    out.reverse();
    out
}

/// Keys whose values change from run to run.
const VOLATILE_KEYS: [&str; 10] = [
    "pid",
    "time",
    "timestamp",
    "started_at",
    "ended_at",
    "duration",
    "duration_ms",
    "elapsed",
    "id",
    "call_id",
];

fn normalize_value(value: &Value) -> String {
    fn strip(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| !VOLATILE_KEYS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
            Value::String(s) => Value::String(normalize_text(s)),
            other => other.clone(),
        }
    }
    strip(value).to_string()
}

/// Masks runs of 4+ digits (pids, epoch times, ports) and ISO-8601 times.
fn normalize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if digits.len() >= 4 {
            out.push('#');
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn act(cmd: &str, out: &str) -> Step {
        Step::action("bash", &json!({"command": cmd}), out, false)
    }

    fn fail(cmd: &str, out: &str) -> Step {
        Step::action("bash", &json!({"command": cmd}), out, true)
    }

    #[test]
    fn rule_1_four_identical_action_observation_pairs() {
        let mut steps = vec![act("ls", "a"); 3];
        assert_eq!(detect(&steps), None);
        steps.push(act("ls", "a"));
        assert_eq!(detect(&steps), Some(StuckRule::RepeatedActionObservation));
        // A different observation means the world changed: not stuck.
        let changing = vec![
            act("ls", "a"),
            act("ls", "b"),
            act("ls", "c"),
            act("ls", "d"),
        ];
        assert_eq!(detect(&changing), None);
    }

    #[test]
    fn the_closing_message_of_a_turn_does_not_hide_the_repetition() {
        let mut steps = vec![act("ls x", "no such file"); 4];
        steps.push(Step::message("I keep trying"));
        assert_eq!(detect(&steps), Some(StuckRule::RepeatedActionObservation));
        let interrupted = vec![
            act("ls", "a"),
            act("ls", "a"),
            Step::message("thinking"),
            act("ls", "a"),
            act("ls", "a"),
        ];
        assert_eq!(detect(&interrupted), None);
    }

    #[test]
    fn rule_2_three_identical_actions_each_ending_in_error() {
        let steps = vec![
            fail("cargo test", "error at 1"),
            fail("cargo test", "error at 2"),
            fail("cargo test", "error at 3"),
        ];
        assert_eq!(detect(&steps), Some(StuckRule::RepeatedActionError));
        let mixed = vec![
            fail("cargo test", "e"),
            act("cargo test", "ok"),
            fail("cargo test", "e"),
        ];
        assert_eq!(detect(&mixed), None);
    }

    #[test]
    fn rule_3_three_identical_messages_with_nothing_between() {
        let m = || Step::message("I will now fix the test.");
        assert_eq!(detect(&[m(), m()]), None);
        assert_eq!(detect(&[m(), m(), m()]), Some(StuckRule::RepeatedMessage));
        assert_eq!(detect(&[m(), m(), act("ls", "a"), m()]), None);
    }

    #[test]
    fn rule_4_alternation_over_six_steps() {
        let (a, b) = (act("git diff", "x"), act("cargo build", "y"));
        let steps = vec![
            a.clone(),
            b.clone(),
            a.clone(),
            b.clone(),
            a.clone(),
            b.clone(),
        ];
        assert_eq!(detect(&steps), Some(StuckRule::Alternation));
        assert_eq!(detect(&steps[..5]), None);
    }

    #[test]
    fn rule_5_ten_compactions_in_a_row() {
        let mut steps = vec![Step::Compaction; 9];
        assert_eq!(detect(&steps), None);
        steps.push(Step::Compaction);
        assert_eq!(detect(&steps), Some(StuckRule::CompactionLoop));
    }

    #[test]
    fn volatile_fields_are_ignored() {
        let one = Step::action(
            "bash",
            &json!({"command": "ps", "pid": 4242, "timestamp": 1}),
            "started pid 31337 at 1732281600",
            false,
        );
        let two = Step::action(
            "bash",
            &json!({"command": "ps", "pid": 5151, "timestamp": 2}),
            "started pid 40404 at 1732281999",
            false,
        );
        assert_eq!(one, two);
        assert_eq!(
            detect(&[one.clone(), two.clone(), one, two]),
            Some(StuckRule::RepeatedActionObservation)
        );
    }
}
