//! The hook matrix: real `sh` hooks for every event × exit code, JSON and plain stdout,
//! malformed JSON, timeouts (the hook's process group is killed), fail-closed hooks, parallel
//! runs with duplicates run once, and the deny > ask > allow merge.
#![allow(clippy::unwrap_used, missing_docs)]

use std::{
    path::Path,
    time::{Duration, Instant},
};

use handoff_policy::{
    PermissionAction,
    hooks::{HookEvent, HookInput, HookRunner, HookSpec, HookVerdict, HooksConfig},
};
use serde_json::json;

const EVENTS: [HookEvent; 5] = [
    HookEvent::PreToolUse,
    HookEvent::PostToolUse,
    HookEvent::Stop,
    HookEvent::TaskStart,
    HookEvent::TaskEnd,
];

fn spec(event: HookEvent, command: &str) -> HookSpec {
    HookSpec {
        event,
        matcher: String::new(),
        command: command.to_owned(),
        timeout_secs: 10,
        fail_closed: false,
    }
}

fn input(event: HookEvent) -> HookInput {
    let mut input = HookInput::new(event, "task-1", "/tmp");
    input.tool_name = Some("Bash".to_owned());
    input.tool_input = Some(json!({"command": "curl http://example.com"}));
    input.tool_use_id = Some("call-1".to_owned());
    input
}

async fn run(specs: Vec<HookSpec>, event: HookEvent, cwd: &Path) -> HookVerdict {
    HookRunner::new(HooksConfig { hooks: specs })
        .run(event, &input(event), cwd)
        .await
}

#[tokio::test]
async fn exit_two_blocks_every_event_that_can_block_with_stderr_as_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    for event in EVENTS {
        let v = run(
            vec![spec(event, "echo 'no curl here' >&2; exit 2")],
            event,
            dir.path(),
        )
        .await;
        match event {
            HookEvent::PreToolUse => {
                assert_eq!(v.decision, Some(PermissionAction::Deny), "{event:?}");
                assert_eq!(v.reason.as_deref(), Some("no curl here"));
            }
            HookEvent::PostToolUse | HookEvent::Stop | HookEvent::TaskStart => {
                assert_eq!(v.block.as_deref(), Some("no curl here"), "{event:?}");
                assert_eq!(v.decision, None);
            }
            HookEvent::TaskEnd => {
                assert!(v.block.is_none());
                assert_eq!(v.errors.len(), 1, "{v:?}");
            }
        }
    }
}

#[tokio::test]
async fn other_exit_codes_are_non_blocking_errors_for_every_event() {
    let dir = tempfile::tempdir().unwrap();
    for event in EVENTS {
        for code in [1, 3, 127] {
            let v = run(
                vec![spec(event, &format!("echo bad >&2; exit {code}"))],
                event,
                dir.path(),
            )
            .await;
            assert_eq!(v.decision, None, "{event:?} {code}");
            assert!(v.block.is_none() && v.stop.is_none(), "{event:?} {code}");
            assert_eq!(v.errors.len(), 1, "{event:?} {code}");
            assert!(
                v.errors[0].contains(&format!("exited with {code}")),
                "{:?}",
                v.errors
            );
        }
    }
}

#[tokio::test]
async fn exit_zero_with_plain_stdout_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for event in EVENTS {
        let v = run(vec![spec(event, "echo all good")], event, dir.path()).await;
        assert_eq!(v.decision, None);
        assert!(v.block.is_none() && v.errors.is_empty(), "{event:?}: {v:?}");
        assert_eq!(v.ran.len(), 1);
    }
}

#[tokio::test]
async fn exit_zero_json_decides_rewrites_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let pre = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"curl is off limits"}}'"#;
    let v = run(
        vec![spec(HookEvent::PreToolUse, pre)],
        HookEvent::PreToolUse,
        dir.path(),
    )
    .await;
    assert_eq!(v.decision, Some(PermissionAction::Deny));
    assert_eq!(v.reason.as_deref(), Some("curl is off limits"));

    let rewrite = r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"curl --max-time 5 http://example.com"},"additionalContext":"capped"}}'"#;
    let v = run(
        vec![spec(HookEvent::PreToolUse, rewrite)],
        HookEvent::PreToolUse,
        dir.path(),
    )
    .await;
    assert_eq!(v.decision, Some(PermissionAction::Allow));
    assert_eq!(
        v.updated_input,
        Some(json!({"command": "curl --max-time 5 http://example.com"}))
    );
    assert_eq!(v.additional_context, ["capped"]);

    let stop = r#"echo '{"continue":false,"stopReason":"budget reached"}'"#;
    let v = run(
        vec![spec(HookEvent::PostToolUse, stop)],
        HookEvent::PostToolUse,
        dir.path(),
    )
    .await;
    assert_eq!(v.stop.as_deref(), Some("budget reached"));

    let block = r#"echo '{"decision":"block","reason":"tests still fail: run cargo test"}'"#;
    let v = run(
        vec![spec(HookEvent::Stop, block)],
        HookEvent::Stop,
        dir.path(),
    )
    .await;
    assert_eq!(v.block.as_deref(), Some("tests still fail: run cargo test"));
}

#[tokio::test]
async fn malformed_json_is_a_non_blocking_error() {
    let dir = tempfile::tempdir().unwrap();
    for event in EVENTS {
        let v = run(
            vec![spec(event, r#"echo '{"decision": "block", '"#)],
            event,
            dir.path(),
        )
        .await;
        assert!(v.block.is_none() && v.decision.is_none(), "{event:?}");
        assert!(v.errors[0].contains("malformed JSON"), "{:?}", v.errors);
    }
}

#[tokio::test]
async fn the_hook_reads_claude_code_input_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("stdin.json");
    let command = format!("cat > {}", seen.display());
    run(
        vec![spec(HookEvent::PreToolUse, &command)],
        HookEvent::PreToolUse,
        dir.path(),
    )
    .await;
    let got: serde_json::Value = serde_json::from_slice(&std::fs::read(&seen).unwrap()).unwrap();
    assert_eq!(got["hook_event_name"], "PreToolUse");
    assert_eq!(got["session_id"], "task-1");
    assert_eq!(got["tool_name"], "Bash");
    assert_eq!(got["tool_input"]["command"], "curl http://example.com");
    assert_eq!(got["tool_use_id"], "call-1");
    assert_eq!(got["cwd"], "/tmp");
}

#[tokio::test]
async fn a_timeout_kills_the_hooks_process_group_and_does_not_block_unless_fail_closed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("grandchild-alive");
    let pids = dir.path().join("grandchildren");
    // The hook leaves a grandchild that notes its pid, then would write the marker after 3 s.
    let command = format!(
        "(sh -c 'echo $$ >> {}; sleep 3; touch {}') & sleep 30",
        pids.display(),
        marker.display()
    );
    let mut slow = spec(HookEvent::PreToolUse, &command);
    slow.timeout_secs = 1;
    let started = Instant::now();
    let v = run(vec![slow.clone()], HookEvent::PreToolUse, dir.path()).await;
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    assert_eq!(v.decision, None);
    assert!(v.errors[0].contains("timed out"), "{:?}", v.errors);

    slow.fail_closed = true;
    let v = run(vec![slow], HookEvent::PreToolUse, dir.path()).await;
    assert_eq!(v.decision, Some(PermissionAction::Deny));
    // A grandchild that had not noted its pid yet was killed before it could.
    let noted = std::fs::read_to_string(&pids).unwrap_or_default();
    assert!(!noted.is_empty(), "no grandchild started in two seconds");
    for pid in noted.lines().map(|l| l.trim().parse::<i32>().unwrap()) {
        wait_until(&format!("grandchild {pid} to be killed"), || {
            if alive(pid) { Err("alive") } else { Ok(()) }
        })
        .await;
    }
    assert!(!marker.exists(), "the grandchild was killed with the group");
}

/// Whether process `pid` runs (a zombie awaiting its reaper counts as gone).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim().chars().next());
        !matches!(state, Some('Z' | 'X') | None)
    })
}

/// Looks at `probe` with a short back-off until it yields `Ok`; after a minute (a safety net
/// only) fails with `what` and the last observation.
async fn wait_until<O: std::fmt::Debug>(what: &str, probe: impl Fn() -> Result<(), O>) {
    let give_up = Instant::now() + Duration::from_secs(60);
    let mut pause = Duration::from_millis(5);
    while let Err(seen) = probe() {
        assert!(
            Instant::now() < give_up,
            "waited for {what}; last seen: {seen:?}"
        );
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn matching_hooks_run_in_parallel_and_identical_commands_once() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let counting = format!("sleep 1; echo x >> {}", count.display());
    let specs = vec![
        spec(HookEvent::PreToolUse, &counting),
        spec(HookEvent::PreToolUse, &counting),
        spec(HookEvent::PreToolUse, "sleep 1"),
        spec(HookEvent::PreToolUse, "sleep 1; true"),
    ];
    let started = Instant::now();
    let v = run(specs, HookEvent::PreToolUse, dir.path()).await;
    assert!(
        started.elapsed().as_millis() < 2500,
        "parallel: {:?}",
        started.elapsed()
    );
    assert_eq!(v.ran.len(), 3);
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1);
}

#[tokio::test]
async fn merged_answers_take_the_strictest_decision() {
    let dir = tempfile::tempdir().unwrap();
    let say = |d: &str| {
        format!(
            r#"echo '{{"hookSpecificOutput":{{"permissionDecision":"{d}","permissionDecisionReason":"{d} says so"}}}}'"#
        )
    };
    let v = run(
        vec![
            spec(HookEvent::PreToolUse, &say("allow")),
            spec(HookEvent::PreToolUse, &say("ask")),
        ],
        HookEvent::PreToolUse,
        dir.path(),
    )
    .await;
    assert_eq!(v.decision, Some(PermissionAction::Ask));
    assert_eq!(v.reason.as_deref(), Some("ask says so"));
    let v = run(
        vec![
            spec(HookEvent::PreToolUse, &say("allow")),
            spec(HookEvent::PreToolUse, &say("deny")),
            spec(HookEvent::PreToolUse, &say("ask")),
        ],
        HookEvent::PreToolUse,
        dir.path(),
    )
    .await;
    assert_eq!(v.decision, Some(PermissionAction::Deny));
}

#[tokio::test]
async fn hooks_for_other_tools_or_events_do_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut edit_only = spec(HookEvent::PreToolUse, "exit 2");
    edit_only.matcher = "Edit|Write".to_owned();
    let v = run(
        vec![edit_only, spec(HookEvent::PostToolUse, "exit 2")],
        HookEvent::PreToolUse,
        dir.path(),
    )
    .await;
    assert_eq!(v, HookVerdict::default());
}
