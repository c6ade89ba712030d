//! A real Synapse for the Matrix tests (started by `scripts/matrix/up.sh`): fresh users through
//! the shared-secret admin API, and the few client calls a test needs to act as a person.

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use super::wait::{PATIENCE, wait_until_async};

/// The running Synapse, from `HANDOFF_TEST_SYNAPSE_URL` and `HANDOFF_TEST_SYNAPSE_SECRET_FILE`.
pub struct Synapse {
    pub url: String,
    secret: String,
    /// Synapse's own log (warnings and errors), beside the secret file when up.sh started it.
    log: std::path::PathBuf,
    http: reqwest::Client,
}

/// A registered user.
#[derive(Clone)]
pub struct User {
    pub id: String,
    pub token: String,
}

const HOW: &str = "start one with `scripts/matrix/up.sh` and export HANDOFF_TEST_SYNAPSE_URL \
    (its SYNAPSE_URL line) and HANDOFF_TEST_SYNAPSE_SECRET_FILE (tests/matrix/registration_secret); \
    scripts/test.sh does both";

impl Synapse {
    /// The Synapse the test scripts started; panics with how to start one.
    pub fn from_env() -> Self {
        let url = std::env::var("HANDOFF_TEST_SYNAPSE_URL").unwrap_or_else(|_| {
            panic!(
                "HANDOFF_TEST_SYNAPSE_URL is not set: the Matrix tests need a real Synapse; {HOW}"
            )
        });
        let file = std::env::var("HANDOFF_TEST_SYNAPSE_SECRET_FILE")
            .unwrap_or_else(|_| panic!("HANDOFF_TEST_SYNAPSE_SECRET_FILE is not set; {HOW}"));
        let secret = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {file} ({e}); {HOW}"))
            .trim()
            .to_owned();
        let _ = rustls::crypto::ring::default_provider().install_default();
        let log = std::path::Path::new(&file)
            .with_file_name("run")
            .join("synapse.log");
        Self {
            url: url.trim_end_matches('/').to_owned(),
            secret,
            log,
            http: reqwest::Client::new(),
        }
    }

    /// Registers a fresh user whose name starts with `prefix`.
    pub async fn user(&self, prefix: &str) -> User {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "{prefix}{}x{}x{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis()
                % 100_000
        );
        let route = format!("{}/_synapse/admin/v1/register", self.url);
        let nonce: Value = self
            .http
            .get(&route)
            .send()
            .await
            .unwrap_or_else(|e| panic!("Synapse at {} does not answer ({e}); {HOW}", self.url))
            .json()
            .await
            .unwrap();
        let nonce = nonce["nonce"].as_str().unwrap().to_owned();
        let password = "pass-word-1";
        let mac = hmac_sha1(&self.secret, &[&nonce, &name, password, "notadmin"]);
        let reply = self
            .http
            .post(&route)
            .json(&json!({"nonce": nonce, "username": name, "password": password, "admin": false, "mac": mac}))
            .send()
            .await
            .unwrap();
        let status = reply.status();
        let body: Value = reply.json().await.unwrap();
        assert!(status.is_success(), "registering {name}: {status} {body}");
        User {
            id: body["user_id"].as_str().unwrap().to_owned(),
            token: body["access_token"].as_str().unwrap().to_owned(),
        }
    }

    async fn request(
        &self,
        user: &User,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}/_matrix/client/v3{path}", self.url))
            .bearer_auth(&user.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let reply = request.send().await.unwrap();
        let status = reply.status().as_u16();
        let text = reply.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// A sync of `user` that Synapse answers afresh. Synapse keeps its answer to a sync for two
    /// minutes (`sync_response_cache_duration`) and hands it to any identical request, so a
    /// repeated initial sync shows the rooms of its first answer, not an invite since. A filter
    /// no other request names (it only leaves out a presence type nobody sends) makes each
    /// request its own. `since`: only what happened after that sync, waiting up to `timeout_ms`.
    async fn fresh_sync(&self, user: &User, since: Option<&str>, timeout_ms: u64) -> Value {
        static N: AtomicUsize = AtomicUsize::new(0);
        let unique = format!("handoff.test.{}", N.fetch_add(1, Ordering::SeqCst));
        let filter = json!({"presence": {"not_types": [unique]}}).to_string();
        let mut url = reqwest::Url::parse(&format!("{}/_matrix/client/v3/sync", self.url)).unwrap();
        url.query_pairs_mut()
            .append_pair("filter", &filter)
            .append_pair("timeout", &timeout_ms.to_string());
        if let Some(since) = since {
            url.query_pairs_mut().append_pair("since", since);
        }
        let reply = self
            .http
            .get(url)
            .bearer_auth(&user.token)
            .send()
            .await
            .unwrap();
        let status = reply.status().as_u16();
        let sync: Value = reply.json().await.unwrap();
        assert_eq!(status, 200, "{sync}");
        sync
    }

    /// Waits until `user` is invited to a room whose name mentions `task`; returns its id.
    pub async fn wait_invite(&self, user: &User, task: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut since: Option<String> = None;
        loop {
            let sync = self.fresh_sync(user, since.as_deref(), 1000).await;
            if let Some(room) = rooms_named(&sync, task, &["invite"]).into_iter().next() {
                return room;
            }
            since = sync["next_batch"].as_str().map(str::to_owned);
            assert!(
                Instant::now() < deadline,
                "{} was never invited to {task}'s room; Synapse's log ends:\n{}",
                user.id,
                self.log_tail(40)
            );
        }
    }

    /// The last `lines` lines of Synapse's log, for a failure's message.
    fn log_tail(&self, lines: usize) -> String {
        match std::fs::read_to_string(&self.log) {
            Ok(text) => {
                let all: Vec<&str> = text.lines().collect();
                all[all.len().saturating_sub(lines)..].join("\n")
            }
            Err(e) => format!("({} unreadable: {e})", self.log.display()),
        }
    }

    /// The rooms `user` is invited to or in whose name mentions `task`.
    pub async fn invites_for(&self, user: &User, task: &str) -> Vec<String> {
        let sync = self.fresh_sync(user, None, 0).await;
        rooms_named(&sync, task, &["invite", "join"])
    }

    /// `user` joins `room`.
    pub async fn join(&self, user: &User, room: &str) {
        let (status, body) = self
            .request(
                user,
                reqwest::Method::POST,
                &format!("/rooms/{}/join", enc(room)),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, 200, "{} joining {room}: {body}", user.id);
    }

    /// `user` writes `text` in `room`: the HTTP status and body.
    pub async fn say(&self, user: &User, room: &str, text: &str) -> (u16, Value) {
        static TXN: AtomicUsize = AtomicUsize::new(0);
        let txn = format!(
            "t{}-{}",
            std::process::id(),
            TXN.fetch_add(1, Ordering::SeqCst)
        );
        self.request(
            user,
            reqwest::Method::PUT,
            &format!("/rooms/{}/send/m.room.message/{txn}", enc(room)),
            Some(json!({"msgtype": "m.text", "body": text})),
        )
        .await
    }

    /// A state event of `room` as `user` sees it.
    pub async fn state(&self, user: &User, room: &str, kind: &str) -> Value {
        let (status, body) = self
            .request(
                user,
                reqwest::Method::GET,
                &format!("/rooms/{}/state/{kind}/", enc(room)),
                None,
            )
            .await;
        assert_eq!(status, 200, "{kind} of {room}: {body}");
        body
    }

    /// `user` creates a public room under the alias local part `alias_name`; its id.
    pub async fn create_room_with_alias(&self, user: &User, alias_name: &str) -> String {
        let (status, body) = self
            .request(
                user,
                reqwest::Method::POST,
                "/createRoom",
                Some(json!({"room_alias_name": alias_name, "preset": "public_chat"})),
            )
            .await;
        assert_eq!(status, 200, "creating a room as {}: {body}", user.id);
        body["room_id"].as_str().unwrap().to_owned()
    }

    /// The room `alias` names as `user` looks it up, or `None` when it names none.
    pub async fn resolve_alias(&self, user: &User, alias: &str) -> Option<String> {
        let (status, body) = self
            .request(
                user,
                reqwest::Method::GET,
                &format!("/directory/room/{}", enc(alias)),
                None,
            )
            .await;
        match status {
            200 => Some(body["room_id"].as_str().unwrap().to_owned()),
            404 => None,
            _ => panic!("resolving {alias}: {status} {body}"),
        }
    }

    /// `member`'s membership in `room` (`join`, `leave` …) as `user` sees it.
    pub async fn membership(&self, user: &User, room: &str, member: &str) -> String {
        let (status, body) = self
            .request(
                user,
                reqwest::Method::GET,
                &format!("/rooms/{}/state/m.room.member/{}", enc(room), enc(member)),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["membership"].as_str().unwrap_or_default().to_owned()
    }

    /// The whole `m.room.create` event of `room`.
    pub async fn create_event(&self, user: &User, room: &str) -> Value {
        let (status, body) = self
            .request(
                user,
                reqwest::Method::GET,
                &format!("/rooms/{}/state", enc(room)),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body.as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "m.room.create")
            .cloned()
            .unwrap()
    }

    /// The room's messages, oldest first.
    pub async fn messages(&self, user: &User, room: &str) -> Vec<Value> {
        let (status, body) = self
            .request(
                user,
                reqwest::Method::GET,
                &format!("/rooms/{}/messages?dir=b&limit=500", enc(room)),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let mut events: Vec<Value> = body["chunk"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "m.room.message")
            .cloned()
            .collect();
        events.reverse();
        events
    }

    /// Waits until a message from `sender` in `room` satisfies `want`; returns it.
    pub async fn wait_message(
        &self,
        user: &User,
        room: &str,
        sender: &str,
        what: &str,
        want: impl Fn(&str) -> bool,
    ) -> Value {
        let wanted = format!("a message {what} from {sender} in {room}");
        wait_until_async(&wanted, PATIENCE, async || {
            let messages = self.messages(user, room).await;
            messages
                .iter()
                .find(|m| m["sender"] == sender && m["content"]["body"].as_str().is_some_and(&want))
                .cloned()
                .ok_or_else(|| format!("{:#?}", bodies(&messages)))
        })
        .await
    }

    /// Waits until `member` has left `room` (as `user` sees it): it can post nothing more there.
    pub async fn wait_left(&self, user: &User, room: &str, member: &str) {
        let what = format!("{member} to leave {room}");
        wait_until_async(&what, PATIENCE, async || {
            let membership = self.membership(user, room, member).await;
            if membership == "leave" {
                Ok(())
            } else {
                Err(membership)
            }
        })
        .await;
    }
}

/// `sender: body` of each message, for failure output.
pub fn bodies(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            format!(
                "{}: {}",
                m["sender"].as_str().unwrap_or("?"),
                m["content"]["body"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn enc(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Hex HMAC-SHA1 of `parts` joined by NUL, computed by python3 (no Rust HMAC dependency).
fn hmac_sha1(key: &str, parts: &[&str]) -> String {
    let output = std::process::Command::new("python3")
        .args([
            "-c",
            "import hmac, hashlib, sys; print(hmac.new(sys.argv[1].encode(), '\\0'.join(sys.argv[2:]).encode(), hashlib.sha1).hexdigest())",
            key,
        ])
        .args(parts)
        .output()
        .expect("python3 computes the registration mac");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// The rooms of a sync's `sections` (`invite`, `join`) whose name mentions `task`.
fn rooms_named(sync: &Value, task: &str, sections: &[&str]) -> Vec<String> {
    let mut rooms = Vec::new();
    for section in sections {
        let Some(map) = sync["rooms"][section].as_object() else {
            continue;
        };
        for (room, data) in map {
            let events = if *section == "invite" {
                &data["invite_state"]["events"]
            } else {
                &data["state"]["events"]
            };
            let named = events.as_array().into_iter().flatten().any(|e| {
                e["type"] == "m.room.name"
                    && e["content"]["name"]
                        .as_str()
                        .is_some_and(|n| n.contains(task))
            });
            if named {
                rooms.push(room.clone());
            }
        }
    }
    rooms
}
