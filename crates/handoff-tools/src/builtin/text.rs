//! The texts of the built-in tools: a ping, a health report, a page of a cut output.

use handoff_protocol::builtin::{HealthReport, PingOutput, ReadToolOutputOutput};
use serde_json::json;

use crate::wording::{call, duration, head_bytes, line};

/// Bytes of a cut output's text shown at most; the rest is one call away.
const OUTPUT_TEXT_BYTES: usize = 8 * 1024;

/// `ping`: the server answers, and who it takes the caller for.
pub(crate) fn ping(out: &PingOutput) -> String {
    let who = match &out.agent_id {
        Some(agent) => format!("You are agent {agent}."),
        None => "You have no agent identity: send the x-agent-id header (or pass agent_id) \
                 before submitting tasks."
            .to_owned(),
    };
    let echo = out
        .message
        .as_deref()
        .map_or_else(String::new, |m| format!(" Echo: {}", line(m, 200)));
    format!("Handoff {} answers. {who}{echo}", out.version)
}

/// `health`: overall state, task counts, then each subsystem that matters.
pub(crate) fn health(report: &HealthReport) -> String {
    let uptime = duration(i64::try_from(report.uptime_ms).unwrap_or(i64::MAX));
    let tasks = report.tasks.map_or_else(String::new, |t| {
        format!(" Tasks: {} running, {} queued.", t.active, t.queued)
    });
    let mut lines = vec![format!(
        "Handoff {} is {} (up {uptime}).{tasks}",
        report.version, report.status
    )];
    lines.extend(report.components.iter().map(|c| {
        let state = if c.ready { "ready" } else { "NOT READY" };
        format!("- {}: {state} — {}", c.name, line(&c.detail, 200))
    }));
    if report.instances.len() > 1 {
        lines.push(format!(
            "Instances sharing the store: {}",
            report.instances.len()
        ));
        lines.extend(report.instances.iter().map(|i| {
            let this = if i.this { " (this one)" } else { "" };
            let draining = if i.draining { ", draining" } else { "" };
            format!("- {}{this}: {} active tasks{draining}", i.id, i.tasks_held)
        }));
    }
    lines.join("\n")
}

/// `read_tool_output`: which part this is, where the next starts, then the text.
pub(crate) fn tool_output(out: &ReadToolOutputOutput) -> String {
    let id = &out.output_id;
    let shown = head_bytes(&out.text, OUTPUT_TEXT_BYTES);
    let end = out.offset + shown.len() as u64;
    let next = if shown.len() < out.text.len() {
        Some(end)
    } else {
        out.next_offset
    };
    let header = match next {
        Some(next) => {
            let more = call(
                "read_tool_output",
                json!({ "output_id": id, "offset": next }),
            );
            format!(
                "Output {id}: {} bytes from offset {} of {}. The rest: {more}.",
                shown.len(),
                out.offset,
                out.total_bytes
            )
        }
        None if out.offset == 0 => format!("Output {id}, whole ({} bytes):", out.total_bytes),
        None => format!(
            "Output {id}: the last {} bytes, from offset {} of {}:",
            shown.len(),
            out.offset,
            out.total_bytes
        ),
    };
    format!("{header}\n{shown}")
}

#[cfg(test)]
mod tests {
    use handoff_protocol::builtin::{ComponentReport, TaskCounts};

    use super::*;

    #[test]
    fn ping_names_the_caller_and_echoes() {
        let out = PingOutput {
            ok: true,
            message: Some("hello".into()),
            agent_id: Some("agent-a".into()),
            server: "handoff".into(),
            version: "0.1.0".into(),
            server_time_ms: 0,
        };
        insta::assert_snapshot!(ping(&out), @"Handoff 0.1.0 answers. You are agent agent-a. Echo: hello");
        let anonymous = PingOutput {
            agent_id: None,
            message: None,
            ..out
        };
        insta::assert_snapshot!(ping(&anonymous), @"Handoff 0.1.0 answers. You have no agent identity: send the x-agent-id header (or pass agent_id) before submitting tasks.");
    }

    #[test]
    fn health_says_what_is_not_ready() {
        let report = HealthReport {
            status: "degraded".into(),
            server: "handoff".into(),
            version: "0.1.0".into(),
            uptime_ms: 7_980_000,
            started_at_ms: 0,
            components: vec![
                ComponentReport {
                    name: "executors".into(),
                    ready: true,
                    detail: "available: opencode, command".into(),
                },
                ComponentReport {
                    name: "store".into(),
                    ready: false,
                    detail: "writes failing: disk full".into(),
                },
            ],
            tasks: Some(TaskCounts {
                active: 1,
                queued: 2,
            }),
            instances: Vec::new(),
            executors: None,
        };
        insta::assert_snapshot!(health(&report), @r"
        Handoff 0.1.0 is degraded (up 2h 13m). Tasks: 1 running, 2 queued.
        - executors: ready — available: opencode, command
        - store: NOT READY — writes failing: disk full
        ");
    }

    #[test]
    fn a_long_output_page_is_shown_in_part_with_the_next_offset() {
        let out = ReadToolOutputOutput {
            output_id: "tool_0123456789abcdef0123456789abcdef".into(),
            text: "x".repeat(20_000),
            offset: 100,
            total_bytes: 50_000,
            next_offset: Some(20_100),
        };
        let text = tool_output(&out);
        let (header, body) = text.split_once('\n').unwrap();
        insta::assert_snapshot!(header, @r#"Output tool_0123456789abcdef0123456789abcdef: 8192 bytes from offset 100 of 50000. The rest: read_tool_output {"offset":8292,"output_id":"tool_0123456789abcdef0123456789abcdef"}."#);
        assert_eq!(body.len(), OUTPUT_TEXT_BYTES);
    }

    #[test]
    fn the_last_page_says_so() {
        let out = ReadToolOutputOutput {
            output_id: "tool_0123456789abcdef0123456789abcdef".into(),
            text: "tail\n".into(),
            offset: 0,
            total_bytes: 5,
            next_offset: None,
        };
        insta::assert_snapshot!(tool_output(&out), @r"
        Output tool_0123456789abcdef0123456789abcdef, whole (5 bytes):
        tail
        ");
    }
}
