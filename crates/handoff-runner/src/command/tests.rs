use std::time::{Duration, Instant};

use handoff_task::{EventKind, ExitInfo, TaskId};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::time::timeout;

use super::*;
use crate::{RunOutcome, process_group_alive};

const WAIT: Duration = Duration::from_secs(10);

fn config(argv: &[&str]) -> CommandConfig {
    CommandConfig {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        prompt_via: PromptVia::Stdin,
        messages_via_stdin: false,
        env: Vec::new(),
        message_format: Default::default(),
        isolation: None,
    }
}

fn sh(script: &str) -> CommandExecutor {
    CommandExecutor::new(config(&["sh", "-c", script])).unwrap()
}

fn spec(dir: &TempDir, prompt: &str) -> RunSpec {
    RunSpec {
        task_id: TaskId::generate().unwrap(),
        attempt: 1,
        prompt: prompt.to_owned(),
        workdir: dir.path().to_path_buf(),
        preset_rules: None,
        continuable: false,
        env: Vec::new(),
        env_hidden: Vec::new(),
    }
}

/// Everything a run reported, split by kind.
#[derive(Debug, Default)]
struct Report {
    stdout: Vec<String>,
    stderr: Vec<String>,
    events: Vec<NewEvent>,
    outcome: Option<RunOutcome>,
}

async fn next(run: &mut Run) -> RunEvent {
    timeout(WAIT, run.events.recv())
        .await
        .expect("no event in time")
        .expect("event stream ended without Finished")
}

/// Reads the run to its end, checking nothing follows Finished.
async fn finish(run: &mut Run) -> Report {
    let mut report = Report::default();
    loop {
        match next(run).await {
            RunEvent::Output { stream, line } | RunEvent::OutputPart { stream, text: line } => {
                match stream {
                    OutputStream::Stdout => report.stdout.push(line),
                    OutputStream::Stderr => report.stderr.push(line),
                }
            }
            RunEvent::Event(event) => report.events.push(event),
            RunEvent::InputRequested(_) | RunEvent::InputSettled { .. } => {
                panic!("the command executor never asks for input")
            }
            RunEvent::Finished(outcome) => {
                report.outcome = Some(outcome);
                break;
            }
        }
    }
    let after = timeout(WAIT, run.events.recv()).await.unwrap();
    assert!(after.is_none(), "event after Finished: {after:?}");
    report
}

/// The pid from the leading "process started" event.
async fn started_pid(run: &mut Run) -> i32 {
    match next(run).await {
        RunEvent::Event(event) => {
            assert_eq!(event.kind, EventKind::Log);
            assert_eq!(event.message, "process started");
            i32::try_from(event.data["pid"].as_i64().unwrap()).unwrap()
        }
        other => panic!("expected the start event, got {other:?}"),
    }
}

/// The next output line, skipping nothing else.
async fn next_line(run: &mut Run) -> String {
    match next(run).await {
        RunEvent::Output { line, .. } => line,
        other => panic!("expected output, got {other:?}"),
    }
}

/// The process exists and is not a zombie awaiting its reaper.
fn pid_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim().chars().next());
        !matches!(state, Some('Z' | 'X') | None)
    })
}

/// (state, pgrp) from `/proc/<pid>/stat`.
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.nth(1)?.parse().ok()?))
}

/// States of the live members of group `pgid`.
fn group_states(pgid: i32) -> Vec<char> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter_map(proc_stat)
        .filter(|&(state, pgrp)| pgrp == pgid && state != 'Z')
        .map(|(state, _)| state)
        .collect()
}

/// Whether group `pgid` is stopped; else its members' states.
fn stopped(pgid: i32) -> Result<(), Vec<char>> {
    let states = group_states(pgid);
    // A shell that vforked waits in 'D' for its stopped child until that child execs.
    if states.contains(&'T') && states.iter().all(|s| matches!(s, 'T' | 'D')) {
        Ok(())
    } else {
        Err(states)
    }
}

/// The bytes process `pid` (with the children it reaped) has written: `wchar` of
/// `/proc/<pid>/io`.
fn written_bytes(pid: i32) -> usize {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

fn failure(code: Option<i32>, signal: Option<i32>, error: &str) -> RunOutcome {
    RunOutcome {
        success: false,
        exit: Some(ExitInfo { code, signal }),
        error: Some(error.to_owned()),
        ..RunOutcome::default()
    }
}

#[test]
fn empty_argv_is_rejected() {
    let err = CommandExecutor::new(config(&[])).unwrap_err();
    assert!(
        matches!(err, RunnerError::NotConfigured { ref executor, .. } if executor == "command")
    );
}

#[test]
fn names_itself_and_reports_capabilities() {
    let plain = sh("true");
    assert_eq!(plain.name(), "command");
    assert_eq!(
        plain.capabilities(),
        Capabilities {
            messages: false,
            pause: true,
            reattach: false
        }
    );
    let mut with_messages = config(&["cat"]);
    with_messages.messages_via_stdin = true;
    let with_messages = CommandExecutor::new(with_messages).unwrap();
    assert!(with_messages.capabilities().messages);
}

#[test]
fn substitution_is_single_pass() {
    let values = [("{prompt}", "use {workdir} {x"), ("{workdir}", "/w")];
    assert_eq!(
        substitute("{prompt}|{workdir}|{nope}|{", &values),
        "use {workdir} {x|/w|{nope}|{"
    );
    assert_eq!(substitute("plain", &values), "plain");
}

#[tokio::test]
async fn missing_program_is_a_spawn_error() {
    let dir = TempDir::new().unwrap();
    let missing = "/nonexistent/handoff-no-such-program";
    let executor = CommandExecutor::new(config(&[missing])).unwrap();
    let err = executor.start(spec(&dir, "")).await.unwrap_err();
    assert!(
        matches!(err, RunnerError::Spawn { ref program, .. } if program == missing),
        "{err:?}"
    );
}

#[tokio::test]
async fn output_arrives_per_stream_in_order_then_success() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("echo one; echo err1 >&2; echo two; echo err2 >&2; printf three")
        .start(spec(&dir, "ignored"))
        .await
        .unwrap();
    let pid = started_pid(&mut run).await;
    let state = run.state.clone().unwrap();
    assert_eq!(state["pgid"], json!(pid));
    assert!(state["start_time"].as_u64().is_some(), "{state}");

    let report = finish(&mut run).await;
    assert_eq!(report.stdout, ["one", "two", "three"]);
    assert_eq!(report.stderr, ["err1", "err2"]);
    assert!(report.events.is_empty());
    assert_eq!(
        report.outcome.unwrap(),
        RunOutcome {
            success: true,
            exit: Some(ExitInfo {
                code: Some(0),
                signal: None
            }),
            error: None,
            ..RunOutcome::default()
        }
    );
    // Everything is safe to call once the run is over.
    assert!(matches!(
        run.control.pause().await,
        Err(RunnerError::Finished)
    ));
    assert!(matches!(
        run.control.resume().await,
        Err(RunnerError::Finished)
    ));
    run.control
        .cancel(Duration::from_millis(100))
        .await
        .unwrap();
}

#[tokio::test]
async fn failures_carry_exit_code_or_signal() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("echo bye; exit 3").start(spec(&dir, "")).await.unwrap();
    let report = finish(&mut run).await;
    assert_eq!(report.stdout, ["bye"]);
    assert_eq!(
        report.outcome.unwrap(),
        failure(Some(3), None, "exit code 3")
    );

    let mut run = sh("kill -9 $$").start(spec(&dir, "")).await.unwrap();
    let report = finish(&mut run).await;
    assert_eq!(
        report.outcome.unwrap(),
        failure(None, Some(9), "killed by signal 9")
    );
}

#[tokio::test]
async fn prompt_via_stdin() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("read line; echo got:$line; cat; echo eof")
        .start(spec(&dir, "hello world"))
        .await
        .unwrap();
    // `cat` ending proves stdin was closed after the prompt.
    assert_eq!(finish(&mut run).await.stdout, ["got:hello world", "eof"]);
}

#[tokio::test]
async fn prompt_via_argument_is_taken_verbatim() {
    let dir = TempDir::new().unwrap();
    let mut config = config(&["sh", "-c", "echo \"$1\"; cat; echo eof", "sh", "{prompt}"]);
    config.prompt_via = PromptVia::Argument;
    let mut run = CommandExecutor::new(config)
        .unwrap()
        .start(spec(&dir, "fix {workdir} and $HOME"))
        .await
        .unwrap();
    assert_eq!(
        finish(&mut run).await.stdout,
        ["fix {workdir} and $HOME", "eof"]
    );
}

#[tokio::test]
async fn runs_in_workdir_with_placeholders_and_env() {
    let dir = TempDir::new().unwrap();
    let mut config = config(&[
        "sh",
        "-c",
        "pwd; echo \"$1\"; echo \"$2\"; echo \"$3\"; echo \"$HANDOFF_TEST_VAR\"",
        "sh",
        "{workdir}",
        "id={task_id}",
        "{prompt}",
    ]);
    config.env = vec![("HANDOFF_TEST_VAR".to_owned(), "set".to_owned())];
    let spec = spec(&dir, "the prompt");
    let task_id = spec.task_id.clone();
    let mut run = CommandExecutor::new(config)
        .unwrap()
        .start(spec)
        .await
        .unwrap();
    let stdout = finish(&mut run).await.stdout;
    let canonical = dir.path().canonicalize().unwrap();
    assert_eq!(
        std::path::Path::new(&stdout[0]).canonicalize().unwrap(),
        canonical
    );
    assert_eq!(stdout[1], dir.path().to_string_lossy());
    assert_eq!(stdout[2], format!("id={task_id}"));
    // With the prompt on stdin, `{prompt}` is left alone.
    assert_eq!(stdout[3], "{prompt}");
    assert_eq!(stdout[4], "set");
}

#[tokio::test]
async fn messages_arrive_as_json_lines_on_stdin() {
    let dir = TempDir::new().unwrap();
    let mut config = config(&[
        "sh",
        "-c",
        "read -r p; echo prompt:$p; read -r m; printf '%s\\n' \"$m\"",
    ]);
    config.messages_via_stdin = true;
    let mut run = CommandExecutor::new(config)
        .unwrap()
        .start(spec(&dir, "go"))
        .await
        .unwrap();
    started_pid(&mut run).await;
    assert_eq!(next_line(&mut run).await, "prompt:go");

    run.control
        .send_message("first line\nsecond \"quoted\"")
        .await
        .unwrap();
    let report = finish(&mut run).await;
    assert_eq!(report.stdout.len(), 1, "{:?}", report.stdout);
    assert!(report.stdout[0].starts_with(r#"{"type":"message","#));
    let message: Value = serde_json::from_str(&report.stdout[0]).unwrap();
    assert_eq!(
        message,
        json!({"type": "message", "message": "first line\nsecond \"quoted\""})
    );
    assert!(report.outcome.unwrap().success);
    assert!(matches!(
        run.control.send_message("late").await,
        Err(RunnerError::Finished)
    ));
}

#[tokio::test]
async fn messages_are_unsupported_unless_configured() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("read p; echo $p").start(spec(&dir, "x")).await.unwrap();
    let err = run.control.send_message("hi").await.unwrap_err();
    let RunnerError::Unsupported { executor, action } = err else {
        panic!("expected Unsupported, got {err:?}");
    };
    assert_eq!((executor.as_str(), action), ("command", "messages"));
    assert_eq!(finish(&mut run).await.stdout, ["x"]);
}

#[tokio::test]
async fn cancel_kills_the_whole_group() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("sleep 300 & echo $!; sleep 300")
        .start(spec(&dir, ""))
        .await
        .unwrap();
    let leader = started_pid(&mut run).await;
    let grandchild: i32 = next_line(&mut run).await.parse().unwrap();
    assert!(pid_alive(leader) && pid_alive(grandchild));
    assert!(process_group_alive(leader));

    // A grace far longer than TERM takes on a loaded machine: ending before it is the proof.
    let started = Instant::now();
    run.control.cancel(Duration::from_secs(60)).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "TERM was not enough?"
    );
    assert!(!pid_alive(leader), "leader survived");
    assert!(!pid_alive(grandchild), "grandchild survived");
    assert!(!process_group_alive(leader));

    let report = finish(&mut run).await;
    assert_eq!(
        report.outcome.unwrap(),
        failure(None, Some(15), "cancelled")
    );
    run.control.cancel(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test]
async fn cancel_kills_a_term_ignoring_group_after_the_grace() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("trap '' TERM; sleep 300 & echo ready; while :; do sleep 0.05; done")
        .start(spec(&dir, ""))
        .await
        .unwrap();
    let leader = started_pid(&mut run).await;
    assert_eq!(next_line(&mut run).await, "ready");

    let grace = Duration::from_millis(300);
    let started = Instant::now();
    run.control.cancel(grace).await.unwrap();
    let took = started.elapsed();
    assert!(took >= grace, "returned before the grace: {took:?}");
    // Killed after the grace, not left running: a bound far from the 300 ms, not a speed.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert!(!pid_alive(leader));
    assert!(!process_group_alive(leader));
    let report = finish(&mut run).await;
    assert_eq!(report.outcome.unwrap(), failure(None, Some(9), "cancelled"));
}

#[tokio::test]
async fn cancel_wakes_a_paused_group() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("echo ready; sleep 300")
        .start(spec(&dir, ""))
        .await
        .unwrap();
    let leader = started_pid(&mut run).await;
    assert_eq!(next_line(&mut run).await, "ready");
    run.control.pause().await.unwrap();

    let started = Instant::now();
    run.control.cancel(Duration::from_secs(60)).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "TERM did not reach the stopped group"
    );
    assert!(!process_group_alive(leader));
    assert_eq!(
        finish(&mut run).await.outcome.unwrap(),
        failure(None, Some(15), "cancelled")
    );
}

#[tokio::test]
async fn natural_exit_kills_lingering_background_children() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("sleep 300 & echo $!")
        .start(spec(&dir, ""))
        .await
        .unwrap();
    let leader = started_pid(&mut run).await;
    let report = timeout(Duration::from_secs(5), finish(&mut run))
        .await
        .expect("the background child kept the run open");
    let grandchild: i32 = report.stdout[0].parse().unwrap();
    assert!(report.outcome.unwrap().success);
    assert!(!pid_alive(grandchild), "background child outlived the task");
    assert!(!process_group_alive(leader));
}

#[tokio::test]
async fn pause_stops_output_and_resume_restarts_it() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("i=0; while :; do echo $i; i=$((i+1)); sleep 0.05; done")
        .start(spec(&dir, ""))
        .await
        .unwrap();
    let leader = started_pid(&mut run).await;
    let mut read = next_line(&mut run).await.len() + 1;

    run.control.pause().await.unwrap();
    crate::test_waits::until("the group to stop", || stopped(leader)).await;
    // Stopped, the shell writes nothing more; the lines it wrote before may still be on their
    // way, all read once they add up to its count of bytes written.
    let written = written_bytes(leader);
    while read < written {
        match next(&mut run).await {
            RunEvent::Output { line, .. } => read += line.len() + 1,
            event => panic!("{event:?}"),
        }
    }
    assert_eq!(read, written, "output while paused");
    assert_eq!(stopped(leader), Ok(()), "the group stays stopped");
    assert_eq!(written_bytes(leader), written, "output while paused");
    let quiet = run.events.try_recv();
    assert!(quiet.is_err(), "output while paused: {quiet:?}");

    run.control.resume().await.unwrap();
    next_line(&mut run).await;
    assert!(!group_states(leader).contains(&'T'));

    run.control.cancel(Duration::from_secs(1)).await.unwrap();
    let report = finish(&mut run).await;
    assert_eq!(report.outcome.unwrap().error.as_deref(), Some("cancelled"));
}

#[tokio::test]
async fn abandon_kills_only_a_group_whose_start_time_matches() {
    let dir = TempDir::new().unwrap();
    let executor = sh("sleep 300 & sleep 300");
    let mut run = executor.start(spec(&dir, "")).await.unwrap();
    let leader = started_pid(&mut run).await;
    let state = run.state.clone().unwrap();
    let recorded = state["start_time"].as_u64().unwrap();

    for wrong in [
        json!({ "pgid": leader, "start_time": recorded + 1 }),
        json!({ "pgid": leader }),
        json!({ "pgid": "nope", "start_time": recorded }),
        json!({ "pgid": 0, "start_time": recorded }),
        json!(null),
    ] {
        executor.abandon(&wrong).await.unwrap();
        assert!(pid_alive(leader), "killed despite {wrong}");
    }
    assert!(process_group_alive(leader));

    executor.abandon(&state).await.unwrap();
    assert!(!process_group_alive(leader));
    assert!(!pid_alive(leader));
    assert_eq!(
        finish(&mut run).await.outcome.unwrap(),
        failure(None, Some(9), "killed by signal 9")
    );
    // A group that is gone is left alone quietly.
    executor.abandon(&state).await.unwrap();
}

/// A consumer slower than the drain timeout loses nothing: the reader waits for it, not on an
/// open pipe (measured: a loaded engine once kept 13,951 of 20,000 lines).
#[tokio::test]
async fn a_slow_consumer_still_gets_every_line() {
    let dir = TempDir::new().unwrap();
    let mut run = sh("seq 1 20000").start(spec(&dir, "")).await.unwrap();
    // Nobody reads while the process ends and the drain timeout passes: the time passing is
    // what is tested, on the supervisor's clock around a real process (which paused time
    // would skip past before the process ended).
    tokio::time::sleep(DRAIN_WAIT).await;
    let report = finish(&mut run).await;
    assert_eq!(report.stdout.len(), 20000);
    assert_eq!(report.stdout.last().map(String::as_str), Some("20000"));
    assert!(report.outcome.unwrap().success);
}

/// Longer than the supervisor's drain timeout (5 s).
const DRAIN_WAIT: Duration = Duration::from_secs(6);
