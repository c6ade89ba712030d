//! Matrix end to end: the real Handoff binary with its Matrix integration against a real
//! Synapse (`scripts/matrix/up.sh`; users registered through the shared-secret admin API),
//! people played by this test through the client-server API.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    harness::{Server, metric, start, start_in},
    mcp::{call, history, ok, task_id, wait_status_for},
    synapse::{Synapse, User, bodies},
    wait::{PATIENCE, exit_within, wait_until, wait_until_async},
};

const AGENT: &str = "agent-matrix";

/// Handoff running bash scripts as tasks, with Matrix on as `bot`.
fn env(
    synapse: &Synapse,
    bot: &User,
    controllers: &str,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_COMMAND_MESSAGES_VIA_STDIN", "true"),
        ("HANDOFF_CANCEL_GRACE_MS", "500"),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
        ("MATRIX_HOMESERVER_URL", synapse.url.as_str()),
        ("MATRIX_ACCESS_TOKEN", bot.token.as_str()),
        ("HANDOFF_MATRIX_CONTROLLERS", controllers),
        ("HANDOFF_MATRIX_EVENT_INTERVAL_MS", "300"),
        ("HANDOFF_MATRIX_SYNC_TIMEOUT_MS", "2000"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    env
}

fn serve(env: &[(String, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    start(&env)
}

fn submit(server: &Server, arguments: Value) -> String {
    task_id(&call(server, AGENT, "execute_task", arguments))
}

/// The message events of a task's history whose text contains `text`.
fn messages_with(server: &Server, id: &str, text: &str) -> usize {
    history(server, AGENT, id)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["kind"] == "message" && e["message"].as_str().is_some_and(|m| m.contains(text))
        })
        .count()
}

#[test]
fn two_observers_get_one_v12_room_read_only_where_events_and_the_escaped_outcome_arrive() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synapse = Synapse::from_env();
    let (bot, alice, bob) = rt.block_on(async {
        (
            synapse.user("bot").await,
            synapse.user("alice").await,
            synapse.user("bob").await,
        )
    });
    let server = serve(&env(&synapse, &bot, &alice.id, &[]));
    let evil = "<img src=x onerror=alert(1)>";
    let script = format!("echo '{evil}'; echo second-line; echo done");
    let id = submit(
        &server,
        json!({"task_description": script, "observers": [bob.id, alice.id]}),
    );
    wait_status_for(&server, AGENT, &id, &["completed"], Duration::from_secs(60));

    rt.block_on(async {
        // One room for the task, to which both observers are invited.
        let room = synapse.wait_invite(&bob, &id).await;
        assert_eq!(synapse.wait_invite(&alice, &id).await, room);
        assert_eq!(synapse.invites_for(&bob, &id).await, vec![room.clone()]);
        synapse.join(&bob, &room).await;

        // Room v12, created by the bot, which is not in the power levels' users.
        let create = synapse.create_event(&bob, &room).await;
        assert_eq!(create["sender"], bot.id.as_str(), "{create}");
        assert_eq!(create["content"]["room_version"], "12", "{create}");
        let levels = synapse.state(&bob, &room, "m.room.power_levels").await;
        assert_eq!(
            levels["users"],
            json!({bob.id.clone(): 0, alice.id.clone(): 50}),
            "observer at 0, controller at 50, creator absent: {levels}"
        );
        assert_eq!(levels["users_default"], 0, "{levels}");
        assert_eq!(levels["events_default"], 50, "{levels}");
        let task = synapse.state(&bob, &room, "dev.handoff.task").await;
        assert_eq!(task["task_id"], id.as_str(), "{task}");

        // A read-only observer cannot write.
        let (status, body) = synapse.say(&bob, &room, "!cancel").await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["errcode"], "M_FORBIDDEN", "{body}");

        // The events and the outcome arrive; the description's HTML is escaped everywhere.
        synapse
            .wait_message(&bob, &room, &bot.id, "with the task's output", |b| {
                b.contains("second-line")
            })
            .await;
        let outcome = synapse
            .wait_message(&bob, &room, &bot.id, "with the outcome", |b| {
                b.contains("completed") && b.contains("Changes:")
            })
            .await;
        assert!(
            outcome["content"]["body"]
                .as_str()
                .unwrap()
                .contains("Answer")
                || outcome["content"]["body"]
                    .as_str()
                    .unwrap()
                    .contains("no final answer"),
            "{outcome}"
        );
        let messages = synapse.messages(&bob, &room).await;
        let first = messages
            .iter()
            .find(|m| m["sender"] == bot.id.as_str())
            .unwrap();
        assert!(
            first["content"]["body"].as_str().unwrap().contains(evil),
            "{first}"
        );
        for message in messages.iter().filter(|m| m["sender"] == bot.id.as_str()) {
            let content = &message["content"];
            assert_eq!(content["format"], "org.matrix.custom.html", "{message}");
            let html = content["formatted_body"].as_str().unwrap();
            assert!(!html.contains("<img"), "unescaped HTML: {html}");
        }
        let escaped = first["content"]["formatted_body"].as_str().unwrap();
        assert!(
            escaped.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{escaped}"
        );
    });
}

#[test]
fn only_controllers_steer_others_are_told_so_and_the_bot_never_hears_itself() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synapse = Synapse::from_env();
    let (bot, alice, mallory) = rt.block_on(async {
        (
            synapse.user("bot").await,
            synapse.user("alice").await,
            synapse.user("mallory").await,
        )
    });
    let server = serve(&env(
        &synapse,
        &bot,
        &alice.id,
        &[("HANDOFF_MATRIX_OBSERVERS_MAY_TALK", "true")],
    ));
    let script = "echo started; while [ ! -f release ]; do sleep 0.1; done";
    let id = submit(
        &server,
        json!({"task_description": script, "observers": [alice.id, mallory.id]}),
    );
    wait_status_for(&server, AGENT, &id, &["running"], Duration::from_secs(60));
    let room = rt.block_on(async {
        let room = synapse.wait_invite(&mallory, &id).await;
        synapse.join(&mallory, &room).await;
        synapse.join(&alice, &room).await;
        // A member who may write but is not a controller: refused, and told so.
        let (status, body) = synapse.say(&mallory, &room, "!cancel").await;
        assert_eq!(status, 200, "{body}");
        synapse
            .wait_message(
                &mallory,
                &room,
                &bot.id,
                "refusing mallory's !cancel",
                |b| b.starts_with("Sorry") && b.contains(&mallory.id),
            )
            .await;
        let (status, _) = synapse
            .say(&mallory, &room, "please delete everything")
            .await;
        assert_eq!(status, 200);
        wait_until_async("the bot's second refusal", PATIENCE, async || {
            let messages = synapse.messages(&mallory, &room).await;
            let refusals = messages
                .iter()
                .filter(|m| {
                    m["sender"] == bot.id.as_str()
                        && m["content"]["body"]
                            .as_str()
                            .is_some_and(|b| b.starts_with("Sorry"))
                })
                .count();
            if refusals == 2 {
                Ok(())
            } else {
                Err(format!("{:#?}", bodies(&messages)))
            }
        })
        .await;
        room
    });
    // Nothing of mallory's reached the task.
    let status = ok(&call(
        &server,
        AGENT,
        "get_task_status",
        json!({"task_id": id}),
    ))
    .clone();
    assert_eq!(status["status"], "running", "{status}");
    assert_eq!(messages_with(&server, &id, "delete everything"), 0);
    let controls = history(&server, AGENT, &id)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "control")
        .count();
    assert_eq!(controls, 0);

    // The controller's !cancel cancels, through the tool pipeline, as the controller.
    rt.block_on(async {
        let (status, body) = synapse.say(&alice, &room, "!cancel").await;
        assert_eq!(status, 200, "{body}");
    });
    wait_status_for(&server, AGENT, &id, &["cancelled"], Duration::from_secs(60));
    let events = history(&server, AGENT, &id)["events"]
        .as_array()
        .unwrap()
        .clone();
    let control = events
        .iter()
        .find(|e| e["kind"] == "control")
        .unwrap_or_else(|| panic!("no control event: {events:#?}"));
    assert!(control.to_string().contains(&alice.id), "{control}");

    rt.block_on(async {
        synapse
            .wait_message(&alice, &room, &bot.id, "with the outcome", |b| {
                b.contains("cancelled") && b.contains("Changes:")
            })
            .await;
        // A marker after everything the bot said: once its answer is there, the bot has read
        // all its own earlier messages, and answered none of them.
        synapse.say(&alice, &room, "!help").await;
        synapse
            .wait_message(&alice, &room, &bot.id, "answering !help", |b| {
                b.starts_with("Commands:")
            })
            .await;
        let messages = synapse.messages(&alice, &room).await;
        let people = messages
            .iter()
            .filter(|m| m["sender"] != bot.id.as_str())
            .count();
        let replies = messages
            .iter()
            .filter(|m| {
                m["sender"] == bot.id.as_str()
                    && m["content"]["body"].as_str().is_some_and(|b| {
                        b.starts_with("Sorry")
                            || b.starts_with("Commands:")
                            || b.starts_with("Not ")
                            || b.contains("cancel") && !b.starts_with("Task ")
                    })
            })
            .count();
        assert_eq!(
            replies,
            people,
            "one reply per human message: {:#?}",
            bodies(&messages)
        );
        assert!(
            messages.iter().all(|m| !m["content"]["body"]
                .as_str()
                .unwrap_or("")
                .contains(&format!("Sorry {}", bot.id))),
            "{:#?}",
            bodies(&messages)
        );
    });
}

#[test]
fn an_agents_owner_is_invited_and_steers_its_tasks_and_another_agents_owner_does_not() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synapse = Synapse::from_env();
    let (bot, olivia, oscar) = rt.block_on(async {
        (
            synapse.user("bot").await,
            synapse.user("olivia").await,
            synapse.user("oscar").await,
        )
    });
    let owners = format!("{AGENT}={},agent-other={}", olivia.id, oscar.id);
    let server = serve(&env(
        &synapse,
        &bot,
        "@nobody:controllers.invalid",
        &[
            ("HANDOFF_MATRIX_OWNERS", owners.as_str()),
            ("HANDOFF_MATRIX_OBSERVERS_MAY_TALK", "true"),
        ],
    ));
    let script = "echo started; while [ ! -f release ]; do sleep 0.1; done";
    // The agent's owner is reason enough for a room. Oscar is only an observer here: he owns
    // another agent, not this one.
    let id = submit(
        &server,
        json!({"task_description": script, "observers": [oscar.id]}),
    );
    wait_status_for(&server, AGENT, &id, &["running"], Duration::from_secs(60));
    rt.block_on(async {
        // The owner is invited without being named, and may write (50); oscar reads at 0.
        let room = synapse.wait_invite(&olivia, &id).await;
        synapse.join(&olivia, &room).await;
        synapse.join(&oscar, &room).await;
        let levels = synapse.state(&olivia, &room, "m.room.power_levels").await;
        assert_eq!(
            levels["users"],
            json!({oscar.id.clone(): 0, olivia.id.clone(): 50}),
            "{levels}"
        );
        let (status, body) = synapse.say(&oscar, &room, "!cancel").await;
        assert_eq!(status, 200, "{body}");
        synapse
            .wait_message(&oscar, &room, &bot.id, "refusing oscar's !cancel", |b| {
                b.starts_with("Sorry") && b.contains(&oscar.id)
            })
            .await;
        let (status, body) = synapse.say(&olivia, &room, "!cancel").await;
        assert_eq!(status, 200, "{body}");
    });
    wait_status_for(&server, AGENT, &id, &["cancelled"], Duration::from_secs(60));
    let events = history(&server, AGENT, &id)["events"]
        .as_array()
        .unwrap()
        .clone();
    let controls: Vec<&Value> = events.iter().filter(|e| e["kind"] == "control").collect();
    assert_eq!(controls.len(), 1, "{events:#?}");
    assert!(controls[0].to_string().contains(&olivia.id), "{events:#?}");
}

/// A bot, a controller (alice) and the settings of a Handoff that is restarted mid-test.
struct Restartable {
    rt: tokio::runtime::Runtime,
    synapse: Synapse,
    bot: User,
    alice: User,
    env: Vec<(String, String)>,
}

fn restartable() -> Restartable {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synapse = Synapse::from_env();
    let (bot, alice) =
        rt.block_on(async { (synapse.user("bot").await, synapse.user("alice").await) });
    // Rooms are left as soon as their task ends (the schedule is stored).
    let env = env(
        &synapse,
        &bot,
        &alice.id,
        &[("HANDOFF_MATRIX_ARCHIVE_AFTER_SECS", "0")],
    );
    Restartable {
        rt,
        synapse,
        bot,
        alice,
        env,
    }
}

/// Runs Handoff with a crash injected at `point` (one task at a time) and submits a task for
/// `alice` to observe, started only once the call has returned, so the crash never cuts the
/// call that submitted it; returns the dead server and the task.
fn crash_at(
    env: &[(String, String)],
    alice: &User,
    point: &str,
    description: &str,
) -> (Server, String) {
    let mut crashing = env.to_vec();
    crashing.extend(
        [
            ("HANDOFF_TEST_ABORT_AT", point),
            ("HANDOFF_MAX_CONCURRENT_TASKS", "1"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let mut server = serve(&crashing);
    let blocker = submit(
        &server,
        json!({"task_description": "while [ ! -e release ]; do sleep 0.1; done"}),
    );
    wait_status_for(
        &server,
        AGENT,
        &blocker,
        &["running"],
        Duration::from_secs(60),
    );
    let id = submit(
        &server,
        json!({"task_description": description, "observers": [alice.id]}),
    );
    let status = ok(&call(
        &server,
        AGENT,
        "get_task_status",
        json!({"task_id": blocker}),
    ))
    .clone();
    let workdir = std::path::PathBuf::from(status["workdir"].as_str().unwrap());
    std::fs::write(workdir.join("release"), "").unwrap();
    assert!(
        exit_within(&mut server.child, PATIENCE).is_some(),
        "Handoff never reached the crash point {point}"
    );
    (server, id)
}

/// Starts Handoff again in a dead server's directory.
fn restart(dead: Server, env: &[(String, String)]) -> Server {
    let dir = dead.kill9();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    start_in(dir, &env)
}

#[test]
fn a_restart_mid_task_neither_misses_nor_replays_a_command() {
    let Restartable {
        rt,
        synapse,
        bot,
        alice,
        env,
    } = restartable();
    let server = serve(&env);
    let script = "while read line; do echo got:$line; done";
    let id = submit(
        &server,
        json!({"task_description": script, "observers": [alice.id], "requeue_on_restart": true}),
    );
    wait_status_for(&server, AGENT, &id, &["running"], Duration::from_secs(60));
    let room = rt.block_on(async {
        let room = synapse.wait_invite(&alice, &id).await;
        synapse.join(&alice, &room).await;
        let (status, first) = synapse.say(&alice, &room, "first-note").await;
        assert_eq!(status, 200, "{first}");
        synapse
            .wait_message(&alice, &room, &bot.id, "answering first-note", |b| {
                b.contains("deliver") || b.contains("recorded")
            })
            .await;
        room
    });
    assert_eq!(messages_with(&server, &id, "first-note"), 1);

    // Handoff dies; a command arrives while it is down.
    let dir = server.kill9();
    rt.block_on(async {
        let (status, body) = synapse.say(&alice, &room, "second-note").await;
        assert_eq!(status, 200, "{body}");
    });
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start_in(dir, &env_ref);
    wait_status_for(&server, AGENT, &id, &["running"], Duration::from_secs(60));
    wait_until("second-note to reach the task", PATIENCE, || {
        messages_with(&server, &id, "second-note") > 0
    });
    rt.block_on(async {
        synapse.say(&alice, &room, "!cancel").await;
    });
    wait_status_for(&server, AGENT, &id, &["cancelled"], Duration::from_secs(60));
    // This process applied the message sent while it was down and the cancel.
    assert_eq!(
        metric(
            &server,
            "handoff_matrix_commands_total{outcome=\"applied\"}"
        ),
        2.0
    );
    assert_eq!(
        messages_with(&server, &id, "first-note"),
        1,
        "replayed after the restart"
    );
    assert_eq!(
        messages_with(&server, &id, "second-note"),
        1,
        "missed or applied twice"
    );
    rt.block_on(async {
        synapse
            .wait_message(&alice, &room, &bot.id, "with the outcome", |b| {
                b.contains("cancelled")
            })
            .await;
        let messages = synapse.messages(&alice, &room).await;
        let replies_to_first = messages
            .iter()
            .filter(|m| m["sender"] == bot.id.as_str())
            .filter(|m| {
                m["content"]["body"]
                    .as_str()
                    .is_some_and(|b| b.contains("recorded") || b.contains("deliver"))
            })
            .count();
        assert_eq!(
            replies_to_first,
            2,
            "one answer per message: {:#?}",
            bodies(&messages)
        );
        // The task ended: the bot leaves its room on the stored schedule.
        synapse.wait_left(&alice, &room, &bot.id).await;
    });
}

/// Handoff dies between creating a task's room and recording it (crash injected at that
/// point): the next process finds the room by its alias instead of creating a second one,
/// posts the task's outcome there, leaves it and frees the alias.
#[test]
fn a_room_created_just_before_a_crash_is_adopted_not_duplicated_or_orphaned() {
    let Restartable {
        rt,
        synapse,
        bot,
        alice,
        env,
    } = restartable();
    let (crashed, id) = crash_at(&env, &alice, "matrix_after_room_created", "sleep 30");
    let room = rt.block_on(synapse.wait_invite(&alice, &id));

    let server = restart(crashed, &env);
    // The crash interrupted the task; the room hears how it ended.
    wait_status_for(&server, AGENT, &id, &["failed"], Duration::from_secs(60));
    rt.block_on(async {
        synapse.join(&alice, &room).await;
        synapse
            .wait_message(&alice, &room, &bot.id, "with the outcome", |b| {
                b.contains("failed")
            })
            .await;
        synapse.wait_left(&alice, &room, &bot.id).await;
        let server_name = bot.id.split_once(':').unwrap().1;
        let alias = format!("#handoff-{id}:{server_name}");
        assert_eq!(
            synapse.resolve_alias(&alice, &alias).await,
            None,
            "the closed room's alias is freed"
        );
    });
    // Read once the outcome was posted, so a second room would have been made by now.
    let invited = rt.block_on(synapse.invites_for(&alice, &id));
    assert!(
        invited.iter().all(|r| *r == room),
        "one room for the task: {invited:?}"
    );
    let notes = history(&server, AGENT, &id)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("Matrix room"))
        })
        .count();
    assert_eq!(notes, 1, "the room is made known once");
    // The operator sees it too: one room adopted, none created by this process, none open.
    assert_eq!(
        metric(&server, "handoff_matrix_rooms_total{origin=\"adopted\"}"),
        1.0
    );
    assert!(metric(&server, "handoff_matrix_messages_total") >= 1.0);
    assert_eq!(metric(&server, "handoff_matrix_open_rooms"), 0.0);
}

/// Anyone on the homeserver may create an alias. Handoff dies after recording a task's alias
/// and before creating its room; a stranger then takes the alias for a room of their own. The
/// next process does not adopt a room its bot is not in: it creates the task's own room, and
/// the stranger's room hears nothing.
#[test]
fn an_alias_a_stranger_took_is_not_adopted() {
    let Restartable {
        rt,
        synapse,
        bot,
        alice,
        env,
    } = restartable();
    let mallory = rt.block_on(synapse.user("mallory"));
    let (crashed, id) = crash_at(&env, &alice, "matrix_after_alias_recorded", "echo finished");
    let decoy = rt.block_on(synapse.create_room_with_alias(&mallory, &format!("handoff-{id}")));

    let server = restart(crashed, &env);
    wait_status_for(&server, AGENT, &id, &["failed"], Duration::from_secs(60));
    rt.block_on(async {
        let room = synapse.wait_invite(&alice, &id).await;
        assert_ne!(room, decoy);
        synapse.join(&alice, &room).await;
        synapse
            .wait_message(&alice, &room, &bot.id, "with the outcome", |b| {
                b.contains("failed")
            })
            .await;
        let heard = synapse.messages(&mallory, &decoy).await;
        assert!(
            heard.iter().all(|m| m["sender"] != bot.id.as_str()),
            "the bot wrote in the stranger's room: {:#?}",
            bodies(&heard)
        );
    });
    assert_eq!(
        metric(&server, "handoff_matrix_rooms_total{origin=\"created\"}"),
        1.0
    );
}

/// The real OpenCode, its model the scripted model: a controller's message from the room
/// reaches the working agent (the model is asked with it), and `!approve` settles the
/// permission request the room was shown.
#[test]
fn opencode_hears_a_controllers_message_and_approve_unblocks_a_permission() {
    use super::executors::{
        AGENT as E2E, OPENCODE, handoff_env, require_ripgrep, script, wait_end, workdir,
    };
    use handoff_scripted_model::ScriptedModel;

    require_ripgrep();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synapse = Synapse::from_env();
    let (bot, alice) =
        rt.block_on(async { (synapse.user("bot").await, synapse.user("alice").await) });
    let state = tempfile::tempdir().unwrap();
    let model = rt
        .block_on(ScriptedModel::start(
            script(&OPENCODE),
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    let mut env = handoff_env(&OPENCODE, &model.base_url(), state.path());
    env.extend(
        [
            ("MATRIX_HOMESERVER_URL", synapse.url.as_str()),
            ("MATRIX_ACCESS_TOKEN", bot.token.as_str()),
            ("HANDOFF_MATRIX_CONTROLLERS", alice.id.as_str()),
            ("HANDOFF_MATRIX_EVENT_INTERVAL_MS", "300"),
            ("HANDOFF_MATRIX_SYNC_TIMEOUT_MS", "2000"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let server = serve(&env);
    let waiting = task_id(&call(
        &server,
        E2E,
        "execute_task",
        json!({"task_description": "WAIT-FOR-NAME then write the file", "observers": [alice.id]}),
    ));
    let asking = task_id(&call(
        &server,
        E2E,
        "execute_task",
        json!({"task_description": "ASK-TOUCH allow", "observers": [alice.id]}),
    ));

    // The message: while the agent works on its slow step, the controller names the file.
    wait_status_for(
        &server,
        E2E,
        &waiting,
        &["running"],
        Duration::from_secs(60),
    );
    wait_until("the agent to start its step", PATIENCE, || {
        history(&server, E2E, &waiting)["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "tool")
    });
    rt.block_on(async {
        let room = synapse.wait_invite(&alice, &waiting).await;
        synapse.join(&alice, &room).await;
        let (status, body) = synapse.say(&alice, &room, "NAME-IS-NOTES").await;
        assert_eq!(status, 200, "{body}");
        synapse
            .wait_message(&alice, &room, &bot.id, "confirming delivery", |b| {
                b.contains("deliver")
            })
            .await;
    });
    std::fs::write(workdir(&server, &waiting).join("release"), "").unwrap();
    let ended = wait_end(&server, &waiting);
    assert_eq!(ended["status"], "completed", "{ended}");
    assert!(workdir(&server, &waiting).join("notes.txt").exists());
    assert!(
        model
            .requests()
            .iter()
            .any(|r| r.scenario.as_deref() == Some("NAME-IS-NOTES")),
        "the model never saw the controller's message"
    );

    // The permission: the room shows the request and the command; !approve settles it.
    let room = rt.block_on(async {
        let room = synapse.wait_invite(&alice, &asking).await;
        synapse.join(&alice, &room).await;
        let shown = synapse
            .wait_message(
                &alice,
                &room,
                &bot.id,
                "showing the permission request",
                |b| b.contains("Answer with: !approve "),
            )
            .await;
        let body = shown["content"]["body"].as_str().unwrap();
        let request = body
            .split("Answer with: !approve ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .to_owned();
        let (status, reply) = synapse
            .say(&alice, &room, &format!("!approve {request}"))
            .await;
        assert_eq!(status, 200, "{reply}");
        let answered = synapse
            .wait_message(&alice, &room, &bot.id, "answering !approve", |b| {
                !b.contains("!approve ") && !b.starts_with("Task ")
            })
            .await;
        let answered = answered["content"]["body"].as_str().unwrap().to_owned();
        assert!(
            !answered.starts_with("Not"),
            "{answered} (request {request:?})"
        );
        room
    });
    let ended = wait_end(&server, &asking);
    assert_eq!(ended["status"], "completed", "{ended}");
    let said = rt.block_on(synapse.messages(&alice, &room));
    assert!(
        workdir(&server, &asking).join("approved.txt").exists(),
        "{:#?}",
        bodies(&said)
    );
}

/// On a shared store (issue 21) a task's room moves with the task: its instance is killed, the
/// survivor takes the task over and posts the outcome to the same room, once.
#[test]
fn a_room_follows_its_task_to_the_instance_that_took_it_over() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synapse = Synapse::from_env();
    let (bot, bob) = rt.block_on(async { (synapse.user("bot").await, synapse.user("bob").await) });
    let url = super::postgres::fresh_database();
    let env = env(
        &synapse,
        &bot,
        &bob.id,
        &[
            ("HANDOFF_DATABASE_URL", url.as_str()),
            ("HANDOFF_HEARTBEAT_MS", "200"),
            ("HANDOFF_LEASE_EXPIRY_MS", "1000"),
            // The bot leaves the room as soon as the task ends, so its leaving is the fact
            // that says no second outcome can follow.
            ("HANDOFF_MATRIX_ARCHIVE_AFTER_SECS", "0"),
        ],
    );
    // The first instance starts alone, so the task is its own.
    let first = serve(&env);
    let id = submit(
        &first,
        json!({"task_description": "echo moving-task-started; sleep 300", "observers": [bob.id]}),
    );
    let room = rt.block_on(async {
        let room = synapse.wait_invite(&bob, &id).await;
        synapse.join(&bob, &room).await;
        synapse
            .wait_message(&bob, &room, &bot.id, "the task's output", |b| {
                b.contains("moving-task-started")
            })
            .await;
        room
    });
    let survivor = serve(&env);
    let _dir = first.kill9();
    wait_status_for(&survivor, AGENT, &id, &["failed"], Duration::from_secs(30));
    rt.block_on(async {
        synapse
            .wait_message(&bob, &room, &bot.id, "the outcome from the survivor", |b| {
                b.contains("failed") && b.contains("lost")
            })
            .await;
        // The bot leaves the room once the task's outcome is posted: nothing more can come.
        synapse.wait_left(&bob, &room, &bot.id).await;
        let outcomes = synapse
            .messages(&bob, &room)
            .await
            .iter()
            .filter(|m| {
                m["sender"] == bot.id.as_str()
                    && m["content"]["body"]
                        .as_str()
                        .is_some_and(|b| b.contains("failed") && b.contains("lost"))
            })
            .count();
        assert_eq!(outcomes, 1, "one outcome in the room");
        let rooms = synapse.invites_for(&bob, &id).await;
        assert!(
            rooms.iter().all(|r| *r == room),
            "no second room: {rooms:?}"
        );
    });
}

/// `handoff doctor` signs the bot in to the real Synapse and says as whom; a refused token is
/// named as such, with where to get one, and never shown.
#[test]
fn doctor_checks_the_bots_matrix_sign_in() {
    let synapse = Synapse::from_env();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let bot = runtime.block_on(synapse.user("doctorbot"));
    let dir = tempfile::tempdir().unwrap();
    let matrix_check = |token: &str| -> Value {
        let output = std::process::Command::new(super::harness::BIN)
            .args(["doctor", "--json"])
            .current_dir(dir.path())
            .env("HANDOFF_DATA_DIR", dir.path().join("data"))
            .env("HANDOFF_DEFAULT_EXECUTOR", "command")
            .env("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#)
            .env("HANDOFF_MATRIX_HOMESERVER_URL", &synapse.url)
            .env("HANDOFF_MATRIX_ACCESS_TOKEN", token)
            .output()
            .unwrap();
        let checks: Value = serde_json::from_slice(&output.stdout).unwrap();
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "matrix")
            .unwrap_or_else(|| panic!("no matrix check: {checks}"))
            .clone()
    };
    let signed_in = matrix_check(&bot.token);
    assert_eq!(signed_in["ok"], true, "{signed_in}");
    assert!(
        signed_in["detail"].as_str().unwrap().contains(&bot.id),
        "{signed_in}"
    );
    let refused = matrix_check("syt_not-a-real-token");
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["detail"].as_str().unwrap().contains("401"),
        "{refused}"
    );
    assert!(
        refused["fix"].as_str().unwrap().contains("docs/matrix.md"),
        "{refused}"
    );
    assert!(
        !refused.to_string().contains("not-a-real-token"),
        "{refused}"
    );
}

/// A controller's message in the room of a task that has ended continues it: the same task
/// runs a follow-up round, the room stays open and carries the round to its own outcome.
#[test]
fn a_controllers_message_after_the_end_continues_the_task_in_its_room() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synapse = Synapse::from_env();
    let (bot, alice) =
        rt.block_on(async { (synapse.user("bot").await, synapse.user("alice").await) });
    let server = serve(&env(&synapse, &bot, &alice.id, &[]));
    // Each round runs the prompt's first line (the description) and stops there.
    let id = submit(
        &server,
        json!({"task_description": "echo round-done; exit 0", "observers": [alice.id]}),
    );
    wait_status_for(&server, AGENT, &id, &["completed"], Duration::from_secs(60));
    let outcomes = |messages: &[Value]| {
        messages
            .iter()
            .filter(|m| {
                m["sender"] == bot.id.as_str()
                    && m["content"]["body"]
                        .as_str()
                        .is_some_and(|b| b.contains("completed") && b.contains("Changes:"))
            })
            .count()
    };
    let room = rt.block_on(async {
        let room = synapse.wait_invite(&alice, &id).await;
        synapse.join(&alice, &room).await;
        synapse
            .wait_message(&alice, &room, &bot.id, "with the first outcome", |b| {
                b.contains("completed") && b.contains("Changes:")
            })
            .await;
        let (status, body) = synapse.say(&alice, &room, "once more, please").await;
        assert_eq!(status, 200, "{body}");
        room
    });
    wait_until("the follow-up round completed", PATIENCE, || {
        let now = ok(&call(
            &server,
            AGENT,
            "get_task_status",
            json!({"task_id": id}),
        ))
        .clone();
        (now["status"] == "completed" && now["round"] == 2).then_some(())
    });
    assert_eq!(messages_with(&server, &id, "once more, please"), 1);
    rt.block_on(async {
        wait_until_async("the second outcome in the room", PATIENCE, async || {
            let messages = synapse.messages(&alice, &room).await;
            if outcomes(&messages) == 2 {
                Ok(())
            } else {
                Err(format!("{:#?}", bodies(&messages)))
            }
        })
        .await;
    });
}
