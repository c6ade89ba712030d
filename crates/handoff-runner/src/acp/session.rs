//! Where an ACP session stands from Handoff's side: whether a prompt turn runs, and the
//! messages waiting for the next one. ACP v1 has no way into a running turn, so a message sent
//! while the agent works becomes the next `session/prompt` once the turn ends.

use serde_json::Value;

use super::protocol;
use crate::{RunnerError, agent_process::Conversation};

/// The session's state as Handoff tracks it.
#[derive(Debug, Default)]
pub(crate) struct Session {
    id: Option<String>,
    turns: u64,
    running: bool,
    queued: Vec<String>,
    /// Permission requests the agent waits on (their JSON-RPC ids).
    asks: Vec<Value>,
    closed: bool,
}

impl Session {
    /// The session exists: the `session/prompt` line carrying the prompt (and early messages).
    pub fn started(&mut self, id: &str, prompt: &str) -> String {
        self.id = Some(id.to_owned());
        self.queued.insert(0, prompt.to_owned());
        self.next_prompt().unwrap_or_default()
    }

    fn next_prompt(&mut self) -> Option<String> {
        let id = self.id.clone()?;
        if self.queued.is_empty() || self.closed {
            return None;
        }
        let texts = std::mem::take(&mut self.queued);
        self.turns += 1;
        self.running = true;
        Some(protocol::prompt(&id, self.turns, &texts))
    }

    /// The prompt turn ended: the next prompt's line when messages wait.
    pub fn turn_ended(&mut self) -> Option<String> {
        self.running = false;
        self.next_prompt()
    }

    /// Whether the turn that just answered is the latest one Handoff sent.
    pub fn is_latest(&self, turn: u64) -> bool {
        turn == self.turns
    }

    /// The session, while a turn runs (for a `session/cancel`).
    pub fn running(&self) -> Option<String> {
        self.running.then(|| self.id.clone()).flatten()
    }

    /// The agent waits on a permission answer.
    pub fn asked(&mut self, id: Value) {
        self.asks.push(id);
    }

    /// A permission request was answered.
    pub fn answered(&mut self, id: &Value) {
        self.asks.retain(|a| a != id);
    }

    /// Every permission request still waiting (taken: a cancel answers them all).
    pub fn take_asks(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.asks)
    }
}

impl Conversation for Session {
    /// A message: the `session/prompt` line to write now, or nothing when it waits for the
    /// session or for the running turn to end.
    fn message(&mut self, text: &str) -> Result<Option<String>, RunnerError> {
        if self.closed {
            return Err(RunnerError::Finished);
        }
        self.queued.push(text.to_owned());
        Ok(match (&self.id, self.running) {
            (Some(_), false) => self.next_prompt(),
            _ => None,
        })
    }

    /// Idle: no turn runs and no message waits.
    fn idle(&self) -> bool {
        !self.running && self.queued.is_empty()
    }

    fn closed(&mut self) -> &mut bool {
        &mut self.closed
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        let value: Value = serde_json::from_str(line).unwrap();
        value["params"]["prompt"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn messages_wait_for_the_session_and_then_for_the_turn() {
        let mut session = Session::default();
        assert_eq!(session.message("early").unwrap(), None);
        let first = session.started("s", "prompt");
        assert_eq!(texts(&first), ["prompt", "early"]);
        assert!(session.is_latest(1));
        assert_eq!(session.message("later").unwrap(), None);
        assert!(!session.try_close());
        let next = session.turn_ended().unwrap();
        assert_eq!(texts(&next), ["later"]);
        assert!(session.is_latest(2));
        assert_eq!(session.turn_ended(), None);
        assert!(session.try_close());
        assert!(matches!(
            session.message("late"),
            Err(RunnerError::Finished)
        ));
    }

    #[test]
    fn a_message_between_turns_starts_one_at_once() {
        let mut session = Session::default();
        session.started("s", "prompt");
        assert_eq!(session.turn_ended(), None);
        let line = session.message("more").unwrap().unwrap();
        assert_eq!(texts(&line), ["more"]);
        assert_eq!(session.running().as_deref(), Some("s"));
    }

    #[test]
    fn a_cancel_takes_every_pending_ask() {
        let mut session = Session::default();
        session.asked(Value::from(0));
        session.asked(Value::from(1));
        session.answered(&Value::from(0));
        assert_eq!(session.take_asks(), [Value::from(1)]);
        assert!(session.take_asks().is_empty());
    }
}
