//! Where a Codex thread stands from Handoff's side: which turn runs, and which follow-up
//! messages Codex has yet to show as user messages. It decides what to write when, and when
//! nothing is left to do so the process can be let go.

use std::collections::HashSet;

use super::protocol;
use crate::{RunnerError, agent_process::Conversation};

/// Client id of the task's prompt; follow-ups count up from 1.
pub(crate) const PROMPT_ID: &str = "handoff-0";

/// A message handed to Codex that has not yet appeared in the thread.
#[derive(Debug)]
struct Pending {
    client_id: String,
    texts: Vec<String>,
    /// The turn Codex said it joined, once it answered.
    turn: Option<String>,
}

/// The thread's state as Handoff tracks it.
#[derive(Debug, Default)]
pub(crate) struct Session {
    thread: Option<String>,
    turn: Option<String>,
    ended_turns: HashSet<String>,
    unconfirmed: Vec<Pending>,
    /// Messages that came before the thread existed; they go out with the prompt.
    early: Vec<String>,
    next_client: u64,
    closed: bool,
}

impl Session {
    /// The thread exists: the `turn/start` line carrying the prompt (and any early messages).
    pub fn thread_started(&mut self, thread: &str, prompt: &str) -> String {
        self.thread = Some(thread.to_owned());
        let mut texts = vec![prompt.to_owned()];
        texts.append(&mut self.early);
        self.hand_over(thread, PROMPT_ID.to_owned(), texts)
    }

    fn hand_over(&mut self, thread: &str, client_id: String, texts: Vec<String>) -> String {
        let line = protocol::turn_start(thread, &client_id, &texts);
        self.unconfirmed.push(Pending {
            client_id,
            texts,
            turn: None,
        });
        line
    }

    /// Codex took a message into `turn`. If that turn already ended without showing it, the
    /// message is sent again (the line to write).
    pub fn accepted(&mut self, client_id: &str, turn: &str) -> Option<String> {
        let ended = self.ended_turns.contains(turn);
        let pending = self
            .unconfirmed
            .iter_mut()
            .find(|p| p.client_id == client_id)?;
        pending.turn = Some(turn.to_owned());
        ended.then(|| self.resend(client_id)).flatten()
    }

    /// Codex refused a message.
    pub fn rejected(&mut self, client_id: &str) {
        self.unconfirmed.retain(|p| p.client_id != client_id);
    }

    /// A user message appeared in the thread.
    pub fn confirmed(&mut self, client_id: &str) {
        self.unconfirmed.retain(|p| p.client_id != client_id);
    }

    /// A turn began.
    pub fn turn_started(&mut self, turn: &str) {
        self.turn = Some(turn.to_owned());
    }

    /// A turn ended: lines re-sending messages it took but never showed.
    pub fn turn_ended(&mut self, turn: &str) -> Vec<String> {
        if self.turn.as_deref() == Some(turn) {
            self.turn = None;
        }
        self.ended_turns.insert(turn.to_owned());
        let lost: Vec<String> = self
            .unconfirmed
            .iter()
            .filter(|p| p.turn.as_deref() == Some(turn))
            .map(|p| p.client_id.clone())
            .collect();
        lost.iter().filter_map(|id| self.resend(id)).collect()
    }

    fn resend(&mut self, client_id: &str) -> Option<String> {
        let thread = self.thread.clone()?;
        let pending = self
            .unconfirmed
            .iter_mut()
            .find(|p| p.client_id == client_id)?;
        pending.turn = None;
        Some(protocol::turn_start(&thread, client_id, &pending.texts))
    }

    /// The running turn, with its thread, for an interrupt.
    pub fn running(&self) -> Option<(String, String)> {
        Some((self.thread.clone()?, self.turn.clone()?))
    }
}

impl Conversation for Session {
    /// A follow-up message: the `turn/start` line to write now (Codex adds it to a running turn
    /// or starts one), or nothing when the thread does not exist yet.
    fn message(&mut self, text: &str) -> Result<Option<String>, RunnerError> {
        if self.closed {
            return Err(RunnerError::Finished);
        }
        let Some(thread) = self.thread.clone() else {
            self.early.push(text.to_owned());
            return Ok(None);
        };
        self.next_client += 1;
        let client_id = format!("handoff-{}", self.next_client);
        Ok(Some(self.hand_over(
            &thread,
            client_id,
            vec![text.to_owned()],
        )))
    }

    /// Idle: no turn runs and every message was seen.
    fn idle(&self) -> bool {
        self.turn.is_none() && self.unconfirmed.is_empty()
    }

    fn closed(&mut self) -> &mut bool {
        &mut self.closed
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn id_of(line: &str) -> String {
        let value: Value = serde_json::from_str(line).unwrap();
        value["params"]["clientUserMessageId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn early_messages_ride_with_the_prompt_and_the_run_closes_once_all_were_seen() {
        let mut session = Session::default();
        assert_eq!(session.message("early").unwrap(), None);
        let first = session.thread_started("t", "prompt");
        assert!(
            first.contains("prompt") && first.contains("early"),
            "{first}"
        );
        assert_eq!(id_of(&first), PROMPT_ID);
        session.turn_started("u1");
        assert!(!session.try_close());

        let follow_up = session.message("more").unwrap().unwrap();
        let client = id_of(&follow_up);
        assert_eq!(session.accepted(PROMPT_ID, "u1"), None);
        assert_eq!(session.accepted(&client, "u1"), None);
        session.confirmed(PROMPT_ID);
        session.confirmed(&client);
        assert!(session.turn_ended("u1").is_empty());
        assert!(session.try_close());
        assert!(matches!(
            session.message("late"),
            Err(RunnerError::Finished)
        ));
    }

    #[test]
    fn a_message_a_turn_took_but_never_showed_is_sent_again() {
        let mut session = Session::default();
        session.thread_started("t", "prompt");
        session.turn_started("u1");
        session.confirmed(PROMPT_ID);
        let client = id_of(&session.message("more").unwrap().unwrap());
        session.accepted(&client, "u1");
        let again = session.turn_ended("u1");
        assert_eq!(again.len(), 1);
        assert_eq!(id_of(&again[0]), client);
        assert!(!session.try_close(), "the message is still on its way");

        // An answer that arrives after its turn ended is treated the same way.
        let late = id_of(&session.message("late").unwrap().unwrap());
        assert!(session.accepted(&late, "u1").is_some());
    }

    #[test]
    fn a_message_in_flight_keeps_the_run_open() {
        let mut session = Session::default();
        session.thread_started("t", "prompt");
        session.turn_started("u1");
        session.confirmed(PROMPT_ID);
        let client = id_of(&session.message("more").unwrap().unwrap());
        assert!(session.turn_ended("u1").is_empty());
        assert!(!session.try_close());
        session.rejected(&client);
        assert!(session.try_close());
    }
}
