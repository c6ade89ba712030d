//! A run's raw output as task events, bounded so a fast or endless printer cannot fill the
//! store: consecutive lines of one stream become one event (up to the event size, flushed
//! [`COALESCE`] after its first line), a line longer than an event is clipped with the number of
//! bytes cut, and past the per-run caps lines are only counted. The whole output goes to the
//! output and log artifacts (with their own cap) alongside; what is gathered here lives in
//! memory until the driver writes the events.

use std::{path::Path, time::Duration};

use handoff_config::TaskConfig;
use handoff_runner::OutputStream;
use handoff_task::{ArtifactKind, EventKind, NewEvent};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::artifacts::ArtifactSink;

/// How long the first line of an event waits for more to join it.
pub(crate) const COALESCE: Duration = Duration::from_millis(100);

/// The caps, per run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutputLimits {
    /// Largest event text.
    pub event_bytes: usize,
    /// Output events stored at most.
    pub max_events: u64,
    /// Bytes of output events stored at most.
    pub max_bytes: u64,
}

impl OutputLimits {
    /// The configured caps.
    pub(crate) fn of(config: &TaskConfig) -> Self {
        Self {
            event_bytes: usize::try_from(config.output_event_max_bytes.bytes())
                .unwrap_or(usize::MAX),
            max_events: u64::from(config.output_max_events),
            max_bytes: config.output_events_max_bytes.bytes(),
        }
    }
}

/// A run's stdout and stderr: whole in the artifacts, bounded as events.
pub(crate) struct RunOutput {
    stdout: ArtifactSink,
    stderr: ArtifactSink,
    events: OutputEvents,
}

impl RunOutput {
    /// Artifacts spilled under `spill` (the task's artifact directory).
    pub(crate) fn new(config: &TaskConfig, spill: &Path) -> Self {
        let inline = config.artifact_inline_bytes.bytes();
        let max = config.artifact_max_bytes.bytes();
        Self {
            stdout: ArtifactSink::new(ArtifactKind::Output, spill.join("output.txt"), inline, max),
            stderr: ArtifactSink::new(ArtifactKind::Log, spill.join("log.txt"), inline, max),
            events: OutputEvents::new(OutputLimits::of(config)),
        }
    }

    /// Takes a line (`ends`) or a piece of one; finished events go to `batch`.
    pub(crate) async fn push(
        &mut self,
        stream: OutputStream,
        text: &str,
        ends: bool,
        batch: &mut Vec<NewEvent>,
    ) {
        let sink = match stream {
            OutputStream::Stdout => &mut self.stdout,
            OutputStream::Stderr => &mut self.stderr,
        };
        sink.push_piece(text, ends).await;
        self.events.push(stream, text, ends, batch);
    }

    /// The executor's final answer, for executors without a stdout stream: artifact only.
    pub(crate) async fn answer(&mut self, text: &str) {
        self.stdout.push_line(text).await;
    }

    /// Ends the gathered event, so what follows is recorded after it.
    pub(crate) fn flush(&mut self, batch: &mut Vec<NewEvent>) {
        self.events.flush(batch);
    }

    /// See [`OutputEvents::due`].
    pub(crate) fn due(&self) -> Option<Instant> {
        self.events.due()
    }

    /// The last events (with what was dropped) into `batch`, and the two artifact sinks.
    pub(crate) fn finish(self, batch: &mut Vec<NewEvent>) -> [ArtifactSink; 2] {
        self.events.finish(batch);
        [self.stdout, self.stderr]
    }
}

/// The event being gathered.
struct Pending {
    stream: OutputStream,
    text: String,
    /// Lines ended in it.
    lines: u64,
    /// Bytes of its lines not kept.
    clipped: u64,
    /// Its last line has not ended yet.
    open: bool,
    since: Instant,
}

impl Pending {
    /// Its last line already filled it: the rest of that line is only counted.
    fn clipping(&self, limits: &OutputLimits) -> bool {
        self.open && self.text.len() >= limits.event_bytes
    }
}

/// Turns output lines (and pieces of long ones) into bounded events.
pub(crate) struct OutputEvents {
    limits: OutputLimits,
    pending: Option<Pending>,
    /// Per stream (stdout, stderr): the line going on was clipped in an event already written,
    /// so its remaining pieces are only counted.
    clipping: [bool; 2],
    events: u64,
    bytes: u64,
    dropped_lines: u64,
    dropped_bytes: u64,
}

impl OutputEvents {
    pub(crate) fn new(limits: OutputLimits) -> Self {
        Self {
            limits,
            pending: None,
            clipping: [false; 2],
            events: 0,
            bytes: 0,
            dropped_lines: 0,
            dropped_bytes: 0,
        }
    }

    fn capped(&self) -> bool {
        self.events >= self.limits.max_events || self.bytes >= self.limits.max_bytes
    }

    /// Takes one piece of output; `ends` says whether it ends its line. Finished events are
    /// pushed to `out`.
    pub(crate) fn push(
        &mut self,
        stream: OutputStream,
        text: &str,
        ends: bool,
        out: &mut Vec<NewEvent>,
    ) {
        let index = stream_index(stream);
        if self.clipping[index] {
            self.clipping[index] = !ends;
            self.dropped_bytes += text.len() as u64;
            return;
        }
        let joins = self.pending.as_ref().is_some_and(|p| {
            p.stream == stream
                && (p.open || p.text.len() + 1 + text.len() <= self.limits.event_bytes)
        });
        if !joins {
            self.flush(out);
        }
        let room = self.limits.event_bytes;
        let capped = self.capped();
        let pending = match &mut self.pending {
            Some(pending) => {
                if !pending.open {
                    pending.text.push('\n');
                }
                pending
            }
            None if capped => {
                self.dropped_bytes += text.len() as u64;
                self.dropped_lines += u64::from(ends);
                return;
            }
            None => self.pending.insert(Pending {
                stream,
                text: String::new(),
                lines: 0,
                clipped: 0,
                open: false,
                since: Instant::now(),
            }),
        };
        let keep = floor_char_boundary(text, room.saturating_sub(pending.text.len()));
        pending.text.push_str(&text[..keep]);
        pending.clipped += (text.len() - keep) as u64;
        pending.open = !ends;
        pending.lines += u64::from(ends);
    }

    /// When the gathered event must be written even if no more output comes. An event whose
    /// line overflowed it waits for the line's end, so the event can say how much was cut.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.pending
            .as_ref()
            .filter(|p| !p.clipping(&self.limits))
            .map(|p| p.since + COALESCE)
    }

    /// Writes the gathered event out (and, the first time the caps are reached, a note that
    /// later output is only counted).
    pub(crate) fn flush(&mut self, out: &mut Vec<NewEvent>) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        self.clipping[stream_index(pending.stream)] = pending.clipping(&self.limits);
        let mut data = json!({ "stream": pending.stream.as_str() });
        let mut message = pending.text;
        if pending.lines > 1 {
            data["lines"] = Value::from(pending.lines);
        }
        if pending.clipped > 0 {
            data["clipped_bytes"] = Value::from(pending.clipped);
            message.push_str(&format!(
                " … [{} more bytes of this line are only in the {} artifact]",
                pending.clipped,
                artifact_of(pending.stream)
            ));
        }
        let was_capped = self.capped();
        self.events += 1;
        self.bytes += message.len() as u64;
        out.push(NewEvent::new(EventKind::Output, message).with_data(data));
        if !was_capped && self.capped() {
            out.push(
                NewEvent::new(
                    EventKind::Log,
                    format!(
                        "output events capped ({} events / {} bytes per run): later output \
                         is counted, not stored as events; the output and log artifacts keep it",
                        self.limits.max_events, self.limits.max_bytes
                    ),
                )
                .with_data(json!({ "output_capped": true })),
            );
        }
    }

    /// At the run's end: the gathered event, and what was dropped past the caps, if anything.
    pub(crate) fn finish(mut self, out: &mut Vec<NewEvent>) {
        self.flush(out);
        if self.dropped_lines == 0 && self.dropped_bytes == 0 {
            return;
        }
        out.push(
            NewEvent::new(
                EventKind::Log,
                format!(
                    "{} lines / {} bytes of output were counted, not stored as events (caps \
                     reached, or the rest of a clipped line); the output and log artifacts keep \
                     them up to their own cap",
                    self.dropped_lines, self.dropped_bytes
                ),
            )
            .with_data(json!({
                "output_dropped": { "lines": self.dropped_lines, "bytes": self.dropped_bytes }
            })),
        );
    }
}

fn stream_index(stream: OutputStream) -> usize {
    match stream {
        OutputStream::Stdout => 0,
        OutputStream::Stderr => 1,
    }
}

fn artifact_of(stream: OutputStream) -> &'static str {
    match stream {
        OutputStream::Stdout => "output",
        OutputStream::Stderr => "log",
    }
}

/// The largest index `<= at` that cuts `text` between characters.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDOUT: OutputStream = OutputStream::Stdout;

    fn limits(event_bytes: usize, max_events: u64, max_bytes: u64) -> OutputLimits {
        OutputLimits {
            event_bytes,
            max_events,
            max_bytes,
        }
    }

    fn messages(events: &[NewEvent]) -> Vec<&str> {
        events.iter().map(|e| e.message.as_str()).collect()
    }

    #[test]
    fn consecutive_lines_share_an_event_up_to_its_size() {
        let mut output = OutputEvents::new(limits(12, 100, 1000));
        let mut out = Vec::new();
        for line in ["one", "two", "three", "four"] {
            output.push(STDOUT, line, true, &mut out);
        }
        output.push(OutputStream::Stderr, "err", true, &mut out);
        output.finish(&mut out);
        assert_eq!(messages(&out), ["one\ntwo", "three\nfour", "err"]);
        assert_eq!(out[0].data, json!({ "stream": "stdout", "lines": 2 }));
        assert_eq!(out[2].data, json!({ "stream": "stderr" }));
    }

    #[test]
    fn a_long_line_is_one_clipped_event() {
        let mut output = OutputEvents::new(limits(10, 100, 1000));
        let mut out = Vec::new();
        output.push(STDOUT, &"x".repeat(8), false, &mut out);
        output.push(STDOUT, "éééé", false, &mut out);
        output.push(STDOUT, &"y".repeat(20), true, &mut out);
        output.push(STDOUT, "next", true, &mut out);
        output.finish(&mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(
            out[0].message.starts_with("xxxxxxxxé …"),
            "{}",
            out[0].message
        );
        assert!(
            out[0].message.contains("26 more bytes"),
            "{}",
            out[0].message
        );
        assert_eq!(out[0].data["clipped_bytes"], 26);
        assert_eq!(out[1].message, "next");
    }

    #[test]
    fn an_overflowing_line_waits_for_its_end_and_its_rest_is_counted_after_a_forced_flush() {
        let mut output = OutputEvents::new(limits(4, 100, 1000));
        let mut out = Vec::new();
        output.push(STDOUT, "abcdef", false, &mut out);
        assert_eq!(output.due(), None, "the event waits for its line's end");
        output.push(OutputStream::Stderr, "e", true, &mut out);
        output.push(STDOUT, "ghi", false, &mut out);
        output.push(STDOUT, "jk", true, &mut out);
        output.push(STDOUT, "next", true, &mut out);
        output.finish(&mut out);
        assert_eq!(messages(&out)[1..3], ["e", "next"]);
        assert!(out[0].message.starts_with("abcd …"), "{}", out[0].message);
        assert_eq!(
            out[3].data["output_dropped"],
            json!({ "lines": 0, "bytes": 5 })
        );
    }

    #[test]
    fn past_the_caps_lines_are_counted_and_reported_at_the_end() {
        let mut output = OutputEvents::new(limits(4, 3, 1000));
        let mut out = Vec::new();
        for n in 0..100 {
            output.push(STDOUT, &format!("l{n:02}"), true, &mut out);
        }
        output.finish(&mut out);
        let stored: Vec<&str> = out
            .iter()
            .filter(|e| e.kind == EventKind::Output)
            .map(|e| e.message.as_str())
            .collect();
        assert_eq!(stored, ["l00", "l01", "l02"]);
        assert!(
            out[3].message.starts_with("output events capped"),
            "{out:?}"
        );
        let last = out.last().unwrap();
        assert_eq!(
            last.data["output_dropped"],
            json!({ "lines": 97, "bytes": 97 * 3 })
        );

        let mut output = OutputEvents::new(limits(100, 1000, 10));
        let mut out = Vec::new();
        output.push(STDOUT, "0123456789", true, &mut out);
        output.flush(&mut out);
        output.push(STDOUT, "more", true, &mut out);
        output.finish(&mut out);
        assert_eq!(out[0].message, "0123456789");
        assert_eq!(out.last().unwrap().data["output_dropped"]["lines"], 1);
    }

    #[test]
    fn an_event_is_due_a_moment_after_its_first_line() {
        let mut output = OutputEvents::new(limits(100, 10, 1000));
        assert_eq!(output.due(), None);
        let before = Instant::now();
        output.push(STDOUT, "a", true, &mut Vec::new());
        let due = output.due().unwrap();
        assert!(due >= before + COALESCE && due <= Instant::now() + COALESCE);
    }
}
