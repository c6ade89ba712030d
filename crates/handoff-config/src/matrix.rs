//! Settings of the Matrix integration: a room per task, who may steer it from there.

use std::time::Duration;

use handoff_task::{AgentId, MatrixUserId, valid_server};

use crate::Secret;

/// Who may send commands and messages to a task from its Matrix room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Controller {
    /// Exactly this user.
    User(MatrixUserId),
    /// Every user of this server (`*:server`).
    Server(String),
}

impl Controller {
    /// Reads `@name:server` or `*:server`; the error does not repeat the value.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some(server) = text.strip_prefix("*:") {
            return if valid_server(server) {
                Ok(Self::Server(server.to_owned()))
            } else {
                Err("expected *:server with a host name and optional port".to_owned())
            };
        }
        MatrixUserId::parse(text)
            .map(Self::User)
            .map_err(|_| "expected a Matrix user id @name:server or *:server".to_owned())
    }

    /// Whether `user` matches.
    pub fn matches(&self, user: &MatrixUserId) -> bool {
        match self {
            Self::User(u) => u == user,
            // Server names compare case-insensitively (DNS); localparts are exact.
            Self::Server(s) => user.server().eq_ignore_ascii_case(s),
        }
    }
}

/// Matrix integration settings (off unless both the homeserver and the token are set).
#[derive(Debug, Clone)]
pub struct MatrixConfig {
    /// The homeserver's client-server API base URL.
    pub homeserver_url: Option<String>,
    /// The bot's access token.
    pub access_token: Option<Secret>,
    /// Give every task a room, not only those with Matrix observers.
    pub room_per_task: bool,
    /// Invited to every task's room.
    pub default_observers: Vec<MatrixUserId>,
    /// Who may steer tasks from their rooms.
    pub controllers: Vec<Controller>,
    /// Observers may write in the room (to each other; the task hears only controllers).
    pub observers_may_talk: bool,
    /// Events are posted at most once per this interval (status changes at once).
    pub event_interval: Duration,
    /// A finished task's room is left this long after it ends.
    pub archive_after: Duration,
    /// Bound on one HTTP call (besides the long poll).
    pub request_timeout: Duration,
    /// How long one `/sync` long poll waits for news.
    pub sync_timeout: Duration,
    /// Each agent's owner on Matrix: steers that agent's tasks and is invited to their rooms.
    pub owners: Vec<Owner>,
}

/// An agent's owner on Matrix (`agent-id=@name:server`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The agent whose tasks the owner may steer.
    pub agent: AgentId,
    /// The owner.
    pub user: MatrixUserId,
}

impl Owner {
    /// Reads `agent-id=@name:server`; the error does not repeat the value.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (agent, user) = text
            .trim()
            .split_once('=')
            .ok_or_else(|| "expected agent-id=@name:server".to_owned())?;
        let agent = AgentId::parse(agent.trim())
            .map_err(|_| "the part before = is not a valid agent id".to_owned())?;
        let user = MatrixUserId::parse(user.trim())
            .map_err(|_| "the part after = is not a Matrix user id @name:server".to_owned())?;
        Ok(Self { agent, user })
    }
}

impl MatrixConfig {
    /// The defaults, with the integration off.
    pub fn off() -> Self {
        Self {
            homeserver_url: None,
            access_token: None,
            room_per_task: false,
            default_observers: Vec::new(),
            controllers: Vec::new(),
            observers_may_talk: false,
            event_interval: Duration::from_secs(2),
            archive_after: Duration::from_secs(3600),
            request_timeout: Duration::from_secs(30),
            sync_timeout: Duration::from_secs(30),
            owners: Vec::new(),
        }
    }

    /// Whether the integration runs.
    pub fn enabled(&self) -> bool {
        self.homeserver_url.is_some() && self.access_token.is_some()
    }

    /// Whether `user` may steer every task (a controller).
    pub fn may_control(&self, user: &MatrixUserId) -> bool {
        self.controllers.iter().any(|c| c.matches(user))
    }

    /// Whether `user` may steer the tasks of `agent`: a controller, or that agent's owner.
    pub fn may_steer(&self, user: &MatrixUserId, agent: &AgentId) -> bool {
        self.may_control(user) || self.owners_of(agent).any(|owner| owner == user)
    }

    /// The Matrix owners of `agent`.
    pub fn owners_of<'a>(&'a self, agent: &'a AgentId) -> impl Iterator<Item = &'a MatrixUserId> {
        self.owners
            .iter()
            .filter(move |o| &o.agent == agent)
            .map(|o| &o.user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> MatrixUserId {
        MatrixUserId::parse(text).unwrap()
    }

    #[test]
    fn controllers_are_users_or_whole_servers() {
        let config = MatrixConfig {
            controllers: vec![
                Controller::parse("@alice:example.org").unwrap(),
                Controller::parse("*:trusted.org").unwrap(),
            ],
            ..MatrixConfig::off()
        };
        assert!(config.may_control(&user("@alice:example.org")));
        assert!(!config.may_control(&user("@mallory:example.org")));
        assert!(!config.may_control(&user("@alice:example.org.evil")));
        assert!(config.may_control(&user("@bob:trusted.org")));
        assert!(config.may_control(&user("@bob:Trusted.ORG")));
        assert!(!config.may_control(&user("@bob:trusted.org:8448")));
        assert!(!config.may_control(&user("@bob:untrusted.org")));
        assert!(!MatrixConfig::off().may_control(&user("@alice:example.org")));
    }

    #[test]
    fn owners_steer_only_their_agents_tasks() {
        let config = MatrixConfig {
            owners: vec![Owner::parse("agent-a = @alice:example.org").unwrap()],
            ..MatrixConfig::off()
        };
        let a = AgentId::parse("agent-a").unwrap();
        let b = AgentId::parse("agent-b").unwrap();
        assert!(config.may_steer(&user("@alice:example.org"), &a));
        assert!(!config.may_steer(&user("@alice:example.org"), &b));
        assert!(!config.may_steer(&user("@bob:example.org"), &a));
        assert!(!config.may_control(&user("@alice:example.org")));
        for bad in [
            "agent-a",
            "agent a=@alice:x.org",
            "agent-a=alice",
            "=@alice:x.org",
        ] {
            let err = Owner::parse(bad).unwrap_err();
            assert!(!err.contains("alice"), "{err}");
        }
    }

    #[test]
    fn bad_patterns_are_refused_without_echo() {
        for bad in ["*", "zed", "*:", "@<b>:x y", "*:bad host"] {
            assert!(Controller::parse(bad).is_err(), "{bad}");
        }
        for bad in ["zed", "@<b>:x y", "*:bad host"] {
            let err = Controller::parse(bad).unwrap_err();
            assert!(!err.contains(bad), "{err}");
        }
    }
}
