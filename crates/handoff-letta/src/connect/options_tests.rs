use handoff_config::LoadOptions;

use super::*;

const AGENT: &str = "agent-00000000-0000-4000-8000-000000000001";
const GATEWAY: &str = "gateway-token-0123456789";

fn config(pairs: &[(&str, &str)]) -> Config {
    let mut env: Vec<(&str, &str)> = vec![("LETTA_API_URL", "http://127.0.0.1:9")];
    env.extend_from_slice(pairs);
    Config::load(LoadOptions {
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..LoadOptions::default()
    })
    .unwrap()
}

fn request(mode: ModeChoice) -> ConnectRequest {
    ConnectRequest {
        targets: Targets::Agents(vec![AGENT.to_owned()]),
        mode,
        prefix: None,
        remove: false,
        allow_gateway_token: false,
    }
}

fn resolve(pairs: &[(&str, &str)], mode: ModeChoice) -> Result<ConnectOptions, ConnectError> {
    ConnectOptions::resolve(&config(pairs), request(mode))
}

#[test]
fn auto_is_mcp_with_a_public_url_and_native_without() {
    let public = [
        ("HANDOFF_PUBLIC_URL", "https://handoff.example.com/"),
        ("HANDOFF_AUTH_TOKEN", GATEWAY),
    ];
    let options = resolve(&public, ModeChoice::Auto).unwrap();
    assert_eq!(options.mode, Mode::Mcp);
    assert_eq!(
        options.endpoint.as_deref(),
        Some("https://handoff.example.com/mcp")
    );
    assert_eq!(options.prefix, "handoff");

    // The address Handoff logs, `/mcp` included, means the same.
    let logged = [
        ("HANDOFF_PUBLIC_URL", "http://11.0.0.1:3600/mcp"),
        ("HANDOFF_AUTH_TOKEN", GATEWAY),
    ];
    let options = resolve(&logged, ModeChoice::Auto).unwrap();
    assert_eq!(
        options.endpoint.as_deref(),
        Some("http://11.0.0.1:3600/mcp")
    );

    let bound = bound_token();
    let local = [
        ("HANDOFF_AUTH_TOKENS", bound.as_str()),
        ("HANDOFF_PORT", "3600"),
    ];
    let options = resolve(&local, ModeChoice::Auto).unwrap();
    assert_eq!(options.mode, Mode::Native);
    assert_eq!(
        options.endpoint.as_deref(),
        Some("http://127.0.0.1:3600/mcp")
    );
}

#[test]
fn mcp_mode_refuses_non_public_urls_and_a_missing_one() {
    for url in [
        "http://127.0.0.1:3500",
        "http://localhost:3500",
        "http://10.0.0.5",
        "http://[::1]:3500",
        "http://box.local",
    ] {
        let err = resolve(
            &[("HANDOFF_PUBLIC_URL", url), ("HANDOFF_AUTH_TOKEN", GATEWAY)],
            ModeChoice::Fixed(Mode::Mcp),
        )
        .unwrap_err();
        assert!(
            matches!(err, ConnectError::NotPublic { .. }),
            "{url}: {err}"
        );
        assert!(err.to_string().contains("--mode native"), "{err}");
    }
    let err = resolve(
        &[("HANDOFF_AUTH_TOKEN", GATEWAY)],
        ModeChoice::Fixed(Mode::Mcp),
    )
    .unwrap_err();
    assert!(matches!(err, ConnectError::NoPublicUrl), "{err}");
    // The same loopback address is fine for native tools, which Letta does not check.
    let bound = bound_token();
    let options = resolve(
        &[
            ("HANDOFF_PUBLIC_URL", "http://127.0.0.1:3500"),
            ("HANDOFF_AUTH_TOKENS", bound.as_str()),
        ],
        ModeChoice::Fixed(Mode::Native),
    )
    .unwrap();
    assert_eq!(
        options.endpoint.as_deref(),
        Some("http://127.0.0.1:3500/mcp")
    );
}

/// `auth.tokens` with a token bound to [`AGENT`].
fn bound_token() -> String {
    format!(r#"[{{"token":"agent-bound-token-0123","role":"agent","agent_id":"{AGENT}"}}]"#)
}

#[test]
fn native_mode_puts_a_token_of_the_agents_own_in_its_secrets_never_the_gateways() {
    // An open Handoff reads no token.
    let open = resolve(&[], ModeChoice::Fixed(Mode::Native)).unwrap();
    assert_eq!(open.token_for(AGENT).unwrap().expose(), super::NO_TOKEN);
    // With a gateway token, each agent gets one derived from it for that agent only.
    let gateway_only = [("HANDOFF_AUTH_TOKEN", GATEWAY)];
    let native = resolve(&gateway_only, ModeChoice::Fixed(Mode::Native)).unwrap();
    let derived = native.token_for(AGENT).unwrap();
    assert_eq!(
        derived,
        handoff_config::derived_agent_token(&Secret::new(GATEWAY), AGENT)
    );
    assert!(!derived.expose().contains(GATEWAY));
    // Tokens but no gateway token: nothing to derive one from, and the error says so.
    let operator = [(
        "HANDOFF_AUTH_TOKENS",
        r#"[{"token":"operator-token-0123","role":"operator"}]"#,
    )];
    let err = resolve(&operator, ModeChoice::Fixed(Mode::Native)).unwrap_err();
    assert!(matches!(err, ConnectError::NoAgentToken { .. }), "{err}");
    assert!(err.to_string().contains("HANDOFF_AUTH_TOKEN"), "{err}");
    assert!(!err.to_string().contains("operator-token"), "{err}");
    // The gateway token itself only when asked for.
    let allowed = ConnectRequest {
        allow_gateway_token: true,
        ..request(ModeChoice::Fixed(Mode::Native))
    };
    let options = ConnectOptions::resolve(&config(&gateway_only), allowed).unwrap();
    assert_eq!(options.token_for(AGENT).unwrap().expose(), GATEWAY);
}

#[test]
fn a_token_is_required_and_an_agent_bound_one_wins_in_native_mode() {
    let bound = bound_token();
    let pairs = [("HANDOFF_AUTH_TOKENS", bound.as_str())];
    let native = resolve(&pairs, ModeChoice::Fixed(Mode::Native)).unwrap();
    assert_eq!(
        native.token_for(AGENT).unwrap().expose(),
        "agent-bound-token-0123"
    );
    // One registration serves every agent in MCP mode: only a gateway token will do.
    let mut public = pairs.to_vec();
    public.push(("HANDOFF_PUBLIC_URL", "https://handoff.example.com"));
    let err = resolve(&public, ModeChoice::Fixed(Mode::Mcp)).unwrap_err();
    assert!(matches!(err, ConnectError::NoToken { .. }), "{err}");
}

#[test]
fn bad_agents_prefixes_and_missing_letta_are_refused_up_front() {
    let mut bad = request(ModeChoice::Auto);
    bad.targets = Targets::Agents(vec!["../../v1/tools".to_owned()]);
    let err =
        ConnectOptions::resolve(&config(&[("HANDOFF_AUTH_TOKEN", GATEWAY)]), bad).unwrap_err();
    assert!(matches!(err, ConnectError::BadAgent { .. }), "{err}");

    let mut bad = request(ModeChoice::Auto);
    bad.prefix = Some("Hand Off".to_owned());
    let err =
        ConnectOptions::resolve(&config(&[("HANDOFF_AUTH_TOKEN", GATEWAY)]), bad).unwrap_err();
    assert!(matches!(err, ConnectError::BadPrefix { .. }), "{err}");

    let no_letta = Config::load(LoadOptions::default()).unwrap();
    let err = ConnectOptions::resolve(&no_letta, request(ModeChoice::Auto)).unwrap_err();
    assert!(matches!(err, ConnectError::NoLetta), "{err}");
}

#[test]
fn a_remove_needs_neither_tokens_nor_an_address() {
    let mut remove = request(ModeChoice::Auto);
    remove.remove = true;
    let options = ConnectOptions::resolve(&config(&[("HANDOFF_PORT", "0")]), remove).unwrap();
    assert!(options.remove);
    assert_eq!(options.endpoint, None);
}
