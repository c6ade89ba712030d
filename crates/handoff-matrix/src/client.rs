//! A thin typed client for the few client-server API routes the integration needs (paths under
//! `/_matrix/client/v3`): who am I, create a room, invite, send a message (idempotent per
//! transaction id), sync with a filter, leave and forget.

use std::time::Duration;

use reqwest::Method;
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::{Value, json};

use crate::MatrixError;

/// A client of one homeserver, logged in by access token. Cheap to clone.
#[derive(Clone)]
pub struct MatrixClient {
    http: reqwest::Client,
    base: String,
    token: String,
    timeout: Duration,
}

impl std::fmt::Debug for MatrixClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// What `/sync` returned that the integration reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SyncResponse {
    /// The token to pass as `since` next time.
    pub next_batch: String,
    /// Rooms with news.
    #[serde(default)]
    pub rooms: SyncRooms,
}

/// The rooms part of a sync.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SyncRooms {
    /// Rooms the bot is joined to, by id.
    #[serde(default)]
    pub join: std::collections::BTreeMap<String, JoinedRoom>,
}

/// News of one joined room.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct JoinedRoom {
    /// New timeline events.
    #[serde(default)]
    pub timeline: Timeline,
}

/// A room's timeline slice.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Timeline {
    /// The events, oldest first.
    #[serde(default)]
    pub events: Vec<RoomEvent>,
}

/// One room event as the integration reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct RoomEvent {
    /// `m.room.message` …
    #[serde(rename = "type")]
    pub kind: String,
    /// The event id (unique per room; `$…`).
    pub event_id: String,
    /// Who sent it.
    pub sender: String,
    /// Its content.
    #[serde(default)]
    pub content: Value,
}

/// What a power-levels override grants.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomSpec {
    /// Plain-text name.
    pub name: String,
    /// Plain-text topic.
    pub topic: String,
    /// Invited at once.
    pub invite: Vec<String>,
    /// `m.room.power_levels` content (without the creator: room v12).
    pub power_levels: Value,
    /// Extra state events `(type, content)` with an empty state key.
    pub initial_state: Vec<(String, Value)>,
    /// The local part of the alias the room is created under (`handoff-<task>`; empty: none):
    /// creating it twice fails with `M_ROOM_IN_USE`, so a creation a crash interrupted is
    /// found, not repeated.
    pub alias_name: String,
}

#[derive(Deserialize)]
struct WhoAmI {
    user_id: String,
}

#[derive(Deserialize)]
struct RoomId {
    room_id: String,
}

#[derive(Deserialize)]
struct FilterId {
    filter_id: String,
}

#[derive(Deserialize)]
struct EventId {
    event_id: String,
}

#[derive(Deserialize, Default)]
struct ErrorBody {
    #[serde(default)]
    errcode: String,
    #[serde(default)]
    error: String,
}

/// Matrix room version of every room created: Synapse's default, where the creator holds
/// unlimited power and must not be listed in the power levels.
pub const ROOM_VERSION: &str = "12";

impl MatrixClient {
    /// A client of `homeserver` with `token`; calls are bounded by `timeout`.
    pub fn new(homeserver: &str, token: &str, timeout: Duration) -> Result<Self, MatrixError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| MatrixError::Config(e.to_string()))?;
        Ok(Self {
            http,
            base: format!("{}/_matrix/client/v3", homeserver.trim_end_matches('/')),
            token: token.to_owned(),
            timeout,
        })
    }

    async fn call<T: DeserializeOwned>(
        &self,
        route: &'static str,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<T, MatrixError> {
        let query: Vec<String> = query
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        let url = if query.is_empty() {
            format!("{}{path}", self.base)
        } else {
            format!("{}{path}?{}", self.base, query.join("&"))
        };
        let mut request = self
            .http
            .request(method, url)
            .bearer_auth(&self.token)
            .timeout(timeout);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| MatrixError::Unreachable {
            route,
            reason: without_url(&e),
        })?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| MatrixError::Unreachable {
                route,
                reason: without_url(&e),
            })?;
        if !status.is_success() {
            let body: ErrorBody = serde_json::from_slice(&bytes).unwrap_or_default();
            return Err(MatrixError::Status {
                route,
                status: status.as_u16(),
                errcode: body.errcode,
                message: body.error.chars().take(200).collect(),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| MatrixError::Decode {
            route,
            source: std::sync::Arc::new(e),
        })
    }

    /// The bot's own user id.
    pub async fn whoami(&self) -> Result<String, MatrixError> {
        let who: WhoAmI = self
            .call(
                "whoami",
                Method::GET,
                "/account/whoami",
                &[],
                None,
                self.timeout,
            )
            .await?;
        Ok(who.user_id)
    }

    /// Creates a private room of [`ROOM_VERSION`]; returns its id.
    pub async fn create_room(&self, spec: &RoomSpec) -> Result<String, MatrixError> {
        let initial_state: Vec<Value> = spec
            .initial_state
            .iter()
            .map(|(kind, content)| json!({"type": kind, "state_key": "", "content": content}))
            .collect();
        let mut body = json!({
            "name": spec.name,
            "topic": spec.topic,
            "preset": "private_chat",
            "room_version": ROOM_VERSION,
            "invite": spec.invite,
            "initial_state": initial_state,
            "power_level_content_override": spec.power_levels,
        });
        if !spec.alias_name.is_empty() {
            body["room_alias_name"] = json!(spec.alias_name);
        }
        let room: RoomId = self
            .call(
                "createRoom",
                Method::POST,
                "/createRoom",
                &[],
                Some(&body),
                self.timeout,
            )
            .await?;
        Ok(room.room_id)
    }

    /// The room `alias` (`#local:server`) names, or `None` when no room has it.
    pub async fn resolve_alias(&self, alias: &str) -> Result<Option<String>, MatrixError> {
        let path = format!("/directory/room/{}", encode(alias));
        match self
            .call::<RoomId>("resolve alias", Method::GET, &path, &[], None, self.timeout)
            .await
        {
            Ok(room) => Ok(Some(room.room_id)),
            Err(MatrixError::Status { errcode, .. }) if errcode == "M_NOT_FOUND" => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `user` (the bot) is joined to `room`: its own membership, which the homeserver
    /// shows only to members.
    pub async fn is_joined(&self, room: &str, user: &str) -> Result<bool, MatrixError> {
        let path = format!(
            "/rooms/{}/state/m.room.member/{}",
            encode(room),
            encode(user)
        );
        match self
            .call::<Value>("membership", Method::GET, &path, &[], None, self.timeout)
            .await
        {
            Ok(member) => Ok(member["membership"] == "join"),
            Err(MatrixError::Status {
                status: 403 | 404, ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Removes `alias` (already gone: no error), so a closed room is no longer found by it.
    pub async fn delete_alias(&self, alias: &str) -> Result<(), MatrixError> {
        let path = format!("/directory/room/{}", encode(alias));
        match self
            .call::<Value>(
                "delete alias",
                Method::DELETE,
                &path,
                &[],
                None,
                self.timeout,
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(MatrixError::Status { errcode, .. }) if errcode == "M_NOT_FOUND" => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Invites `user` to `room` (already invited or joined: no error).
    pub async fn invite(&self, room: &str, user: &str) -> Result<(), MatrixError> {
        let path = format!("/rooms/{}/invite", encode(room));
        let _: Value = self
            .call(
                "invite",
                Method::POST,
                &path,
                &[],
                Some(&json!({"user_id": user})),
                self.timeout,
            )
            .await?;
        Ok(())
    }

    /// Sends `content` as an `m.room.message`; the same `txn` always yields the same event,
    /// so a retried send is never posted twice. Returns the event id.
    pub async fn send(
        &self,
        room: &str,
        txn: &str,
        content: &Value,
    ) -> Result<String, MatrixError> {
        let path = format!(
            "/rooms/{}/send/m.room.message/{}",
            encode(room),
            encode(txn)
        );
        let sent: EventId = self
            .call("send", Method::PUT, &path, &[], Some(content), self.timeout)
            .await?;
        Ok(sent.event_id)
    }

    /// A room's current state event `kind` (empty state key).
    pub async fn state(&self, room: &str, kind: &str) -> Result<Value, MatrixError> {
        let path = format!("/rooms/{}/state/{}/", encode(room), encode(kind));
        self.call("state", Method::GET, &path, &[], None, self.timeout)
            .await
    }

    /// Uploads a sync filter for `user`: room messages only, no presence; returns its id.
    pub async fn message_filter(&self, user: &str) -> Result<String, MatrixError> {
        let body = json!({
            "room": {
                "timeline": {"limit": 100, "types": ["m.room.message"]},
                "state": {"types": []},
                "ephemeral": {"types": []},
                "account_data": {"types": []},
            },
            "presence": {"types": []},
            "account_data": {"types": []},
        });
        let path = format!("/user/{}/filter", encode(user));
        let filter: FilterId = self
            .call(
                "filter",
                Method::POST,
                &path,
                &[],
                Some(&body),
                self.timeout,
            )
            .await?;
        Ok(filter.filter_id)
    }

    /// One `/sync`: from `since` (or the start), waiting up to `wait` for news.
    pub async fn sync(
        &self,
        filter: &str,
        since: Option<&str>,
        wait: Duration,
    ) -> Result<SyncResponse, MatrixError> {
        let wait_ms = wait.as_millis().to_string();
        let mut query = vec![("filter", filter), ("timeout", wait_ms.as_str())];
        if let Some(since) = since {
            query.push(("since", since));
        }
        self.call(
            "sync",
            Method::GET,
            "/sync",
            &query,
            None,
            self.timeout + wait,
        )
        .await
    }

    /// Leaves `room` with `reason`, then forgets it.
    pub async fn leave_and_forget(&self, room: &str, reason: &str) -> Result<(), MatrixError> {
        let leave = format!("/rooms/{}/leave", encode(room));
        let _: Value = self
            .call(
                "leave",
                Method::POST,
                &leave,
                &[],
                Some(&json!({"reason": reason})),
                self.timeout,
            )
            .await?;
        let forget = format!("/rooms/{}/forget", encode(room));
        let _: Value = self
            .call(
                "forget",
                Method::POST,
                &forget,
                &[],
                Some(&json!({})),
                self.timeout,
            )
            .await?;
        Ok(())
    }
}

/// An HTTP client error without the URL (it holds nothing secret, but query strings may).
fn without_url(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    kind.to_owned()
}

/// Percent-encodes a path segment (room ids hold `!`, event ids `$`, user ids `@` and `:`).
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(encode("!abc:x.org"), "%21abc%3Ax.org");
        assert_eq!(encode("@u/../x"), "%40u%2F..%2Fx");
    }
}
