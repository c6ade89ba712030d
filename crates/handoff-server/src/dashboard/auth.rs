//! Who is looking: whether the dashboard is on, operator logins (cookie sessions held in
//! memory), and the viewer a request stands for.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

use handoff_config::{ServerConfig, TokenRole};
use handoff_tools::AgentId;
use http::{HeaderMap, StatusCode, header};

use super::Dashboard;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "handoff_session";
/// Whom an open (loopback, tokenless) dashboard acts as.
pub(crate) const OPEN_OPERATOR: &str = "dashboard";

/// Whether, and how, the dashboard may be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// No operator can be told apart from a stranger: every page answers 404.
    Off,
    /// Bound to loopback with no tokens: every local viewer is the operator `dashboard`.
    Open,
    /// Operator tokens are configured: a login (session cookie) or a bearer token.
    Tokens,
}

impl Access {
    /// Decides from the server's settings.
    pub(crate) fn from_config(server: &ServerConfig) -> Self {
        let operators = server
            .tokens
            .0
            .iter()
            .any(|g| matches!(g.role, TokenRole::Operator(_)));
        let no_tokens = server.tokens.0.is_empty() && server.auth_token.is_none();
        if operators {
            Access::Tokens
        } else if no_tokens && is_loopback(&server.host) {
            Access::Open
        } else {
            Access::Off
        }
    }
}

/// Whether a bind address reaches this machine only.
pub(crate) fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The operator a request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Viewer {
    /// The operator's name, recorded as who acted.
    pub(crate) name: AgentId,
    /// The token forms carry to prove they came from a page of this dashboard.
    pub(crate) csrf: Option<String>,
    /// Authenticated by an `Authorization` header, which no other site can make a browser send.
    pub(crate) bearer: bool,
    /// Logged in with a session cookie (so there is a login to end).
    pub(crate) login: bool,
}

/// Why a request has no viewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No session cookie (or an expired one) and no bearer token.
    NotLoggedIn,
    /// A bearer token that is none of the configured ones.
    BadToken,
    /// A real token, but an agent's or a gateway's.
    NotOperator(&'static str),
}

impl Refusal {
    /// The HTTP status of the refusal.
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Refusal::NotLoggedIn | Refusal::BadToken => StatusCode::UNAUTHORIZED,
            Refusal::NotOperator(_) => StatusCode::FORBIDDEN,
        }
    }

    /// What to tell the viewer (never the token).
    pub(crate) fn message(self) -> String {
        match self {
            Refusal::NotLoggedIn => "Log in with an operator token first (/login).".to_owned(),
            Refusal::BadToken => "That token is not one this server accepts.".to_owned(),
            Refusal::NotOperator(role) => format!(
                "That is {} {role} token: the dashboard is for operators (auth.tokens, role operator).",
                if role == "agent" { "an" } else { "a" }
            ),
        }
    }
}

/// Who a presented token stands for, as a viewer.
pub(crate) fn operator_for(dashboard: &Dashboard, token: &str) -> Result<AgentId, Refusal> {
    match dashboard.policy.role_of(token) {
        Some(TokenRole::Operator(name)) => Ok(name),
        Some(role) => Err(Refusal::NotOperator(role.as_str())),
        None => Err(Refusal::BadToken),
    }
}

/// The viewer of a request: the open dashboard's operator, a bearer operator token, or a login.
pub(crate) fn identify(dashboard: &Dashboard, headers: &HeaderMap) -> Result<Viewer, Refusal> {
    if dashboard.access == super::Access::Open {
        return AgentId::parse(OPEN_OPERATOR)
            .map(|name| Viewer {
                name,
                csrf: dashboard.open_csrf.clone(),
                bearer: false,
                login: false,
            })
            .map_err(|_| Refusal::NotLoggedIn);
    }
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let presented = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(Refusal::BadToken)?;
        return operator_for(dashboard, presented.trim()).map(|name| Viewer {
            name,
            csrf: None,
            bearer: true,
            login: false,
        });
    }
    cookie_value(headers, COOKIE)
        .and_then(|id| dashboard.sessions.get(id))
        .ok_or(Refusal::NotLoggedIn)
}

/// The value of cookie `name`, from the first `Cookie` header that has it.
pub(crate) fn cookie_value<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The `Set-Cookie` value of a new login.
pub(crate) fn session_cookie(id: &str, ttl: Duration, secure: bool) -> String {
    format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{}",
        ttl.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that ends a login in the browser.
pub(crate) fn cleared_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

/// 32 random bytes as hex; `None` when the system has no randomness to give.
pub(crate) fn random_token() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One login.
#[derive(Debug)]
struct Session {
    operator: AgentId,
    csrf: String,
    expires: Instant,
}

/// Logins held in memory: random ids, an expiry, and a bound on how many exist.
#[derive(Debug)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Session>>,
    ttl: Duration,
    max: usize,
}

impl Sessions {
    /// No logins yet; each lasts `ttl`, at most `max` are kept.
    pub(crate) fn new(ttl: Duration, max: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            ttl,
            max: max.max(1),
        }
    }

    /// How long a login lasts.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Logs `operator` in: the new session's id, or `None` without randomness for it. Expired
    /// logins go first; when still full, the one closest to expiring gives way.
    pub(crate) fn create(&self, operator: AgentId) -> Option<String> {
        let (id, csrf) = (random_token()?, random_token()?);
        let now = Instant::now();
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, s| s.expires > now);
        while map.len() >= self.max {
            let oldest = map
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())?;
            map.remove(&oldest);
        }
        map.insert(
            id.clone(),
            Session {
                operator,
                csrf,
                expires: now + self.ttl,
            },
        );
        Some(id)
    }

    /// The viewer of a live login.
    pub(crate) fn get(&self, id: &str) -> Option<Viewer> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(id) {
            Some(s) if s.expires > Instant::now() => Some(Viewer {
                name: s.operator.clone(),
                csrf: Some(s.csrf.clone()),
                bearer: false,
                login: true,
            }),
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends a login.
    pub(crate) fn remove(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// How many logins are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str) -> AgentId {
        AgentId::parse(name).unwrap()
    }

    fn access(env: &[(&str, &str)]) -> Access {
        let config = handoff_config::Config::load(handoff_config::LoadOptions {
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..handoff_config::LoadOptions::default()
        })
        .unwrap();
        Access::from_config(&config.server)
    }

    #[test]
    fn on_with_an_operator_token_or_as_an_open_loopback_server_only() {
        let operator = r#"[{"token":"operator-token-0000001","role":"operator"}]"#;
        let agent = r#"[{"token":"agent-token-000000001","role":"agent","agent_id":"a"}]"#;
        assert_eq!(access(&[]), Access::Open);
        assert_eq!(access(&[("HANDOFF_HOST", "0.0.0.0")]), Access::Off);
        assert_eq!(access(&[("HANDOFF_AUTH_TOKENS", operator)]), Access::Tokens);
        let public = [
            ("HANDOFF_HOST", "0.0.0.0"),
            ("HANDOFF_AUTH_TOKENS", operator),
        ];
        assert_eq!(access(&public), Access::Tokens);
        assert_eq!(access(&[("HANDOFF_AUTH_TOKENS", agent)]), Access::Off);
        assert_eq!(
            access(&[("HANDOFF_AUTH_TOKEN", "gateway-token-00001")]),
            Access::Off
        );
    }

    #[test]
    fn loopback_names() {
        for host in ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["0.0.0.0", "::", "10.0.0.1", "example.com"] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn sessions_are_random_bounded_and_expire() {
        let sessions = Sessions::new(Duration::from_secs(60), 3);
        let ids: Vec<String> = (0..5)
            .map(|_| sessions.create(agent("op")).unwrap())
            .collect();
        assert_eq!(sessions.len(), 3, "bounded");
        assert!(sessions.get(&ids[0]).is_none(), "the oldest gave way");
        let viewer = sessions.get(&ids[4]).unwrap();
        assert_eq!(viewer.name.as_str(), "op");
        assert_eq!(viewer.csrf.as_ref().map(String::len), Some(64));
        assert_ne!(ids[3], ids[4]);
        assert_eq!(ids[4].len(), 64);
        sessions.remove(&ids[4]);
        assert!(sessions.get(&ids[4]).is_none());

        let short = Sessions::new(Duration::ZERO, 3);
        let id = short.create(agent("op")).unwrap();
        assert!(short.get(&id).is_none(), "expired");
    }

    #[test]
    fn cookies_are_read_by_exact_name_and_set_strictly() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            "other=1; handoff_session_x=no; handoff_session=abc"
                .parse()
                .unwrap(),
        );
        assert_eq!(cookie_value(&headers, COOKIE), Some("abc"));
        assert_eq!(cookie_value(&headers, "missing"), None);
        let set = session_cookie("abc", Duration::from_secs(10), false);
        assert_eq!(
            set,
            "handoff_session=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=10"
        );
        assert!(session_cookie("abc", Duration::from_secs(10), true).ends_with("; Secure"));
        assert!(cleared_cookie().contains("Max-Age=0"));
    }

    #[test]
    fn refusals_name_the_role_not_the_token() {
        assert_eq!(
            Refusal::NotOperator("agent").status(),
            StatusCode::FORBIDDEN
        );
        assert!(
            Refusal::NotOperator("agent")
                .message()
                .contains("an agent token")
        );
        assert!(
            Refusal::NotOperator("gateway")
                .message()
                .contains("a gateway token")
        );
        assert_eq!(Refusal::BadToken.status(), StatusCode::UNAUTHORIZED);
    }
}
