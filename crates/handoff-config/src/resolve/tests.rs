use std::{collections::BTreeMap, io::Write, path::PathBuf, time::Duration};

use pretty_assertions::assert_eq;

use super::*;
use crate::CliOverride;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    path
}

fn source_of(config: &Config, key: &str) -> Source {
    config
        .effective
        .iter()
        .find(|e| e.key == key)
        .unwrap()
        .source
        .clone()
}

#[test]
fn defaults_bind_loopback_3500() {
    let config = Config::load(LoadOptions::default()).unwrap();
    assert_eq!(config.bind_address(), "127.0.0.1:3500");
    assert_eq!(config.tasks.max_concurrent, 10);
    assert_eq!(config.server.max_body_bytes, ByteSize(4 << 20));
    assert_eq!(config.data_dir, PathBuf::from(".handoff"));
    assert_eq!(config.database_path(), PathBuf::from(".handoff/handoff.db"));
    assert!(config.letta.api_url.is_none());
}

#[test]
fn every_setting_is_resolved_once() {
    let config = Config::load(LoadOptions::default()).unwrap();
    let keys: Vec<_> = config.effective.iter().map(|e| e.key).collect();
    let mut expected: Vec<_> = SETTINGS.iter().map(|s| s.key).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(sorted, expected);
}

#[test]
fn precedence_cli_over_env_over_dotenv_over_file_over_default() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "handoff.toml",
        "[server]\nport = 4000\nhost = \"127.0.0.1\"\n[tasks]\nmax_concurrent = 4\nmax_queued = 7\nsync_wait_ms = 11\n",
    );
    let dotenv = write(
        &dir,
        ".env",
        "MCP_PORT=4100\nMAX_CONCURRENT_TASKS=5\nHANDOFF_MAX_QUEUED_TASKS=8\n",
    );
    let options = LoadOptions {
        config_file: Some(file.clone()),
        default_config_file: None,
        dotenv_file: Some(dotenv.clone()),
        env: env(&[("MCP_PORT", "4200"), ("MAX_CONCURRENT_TASKS", "6")]),
        cli: vec![CliOverride {
            key: "server.port",
            flag: "--port",
            value: "4300".into(),
        }],
    };
    let config = Config::load(options).unwrap();
    assert_eq!(config.server.port, 4300);
    assert_eq!(
        source_of(&config, "server.port"),
        Source::Cli {
            flag: "--port".into()
        }
    );
    assert_eq!(config.tasks.max_concurrent, 6);
    assert_eq!(
        source_of(&config, "tasks.max_concurrent"),
        Source::Env {
            var: "MAX_CONCURRENT_TASKS".into()
        }
    );
    assert_eq!(config.tasks.max_queued, 8);
    assert_eq!(
        source_of(&config, "tasks.max_queued"),
        Source::DotEnv {
            path: dotenv,
            var: "HANDOFF_MAX_QUEUED_TASKS".into()
        }
    );
    assert_eq!(config.tasks.sync_wait.as_millis(), 11);
    assert_eq!(
        source_of(&config, "tasks.sync_wait_ms"),
        Source::File {
            path: file,
            key: "tasks.sync_wait_ms".into()
        }
    );
    assert_eq!(
        source_of(&config, "tasks.max_description_bytes"),
        Source::Default
    );
    // The per-agent limit follows the global one unless set.
    assert_eq!(config.tasks.max_concurrent_per_agent, 6);
}

#[test]
fn handoff_names_win_over_legacy_names() {
    let options = LoadOptions {
        env: env(&[("MCP_PORT", "4200"), ("HANDOFF_PORT", "4201")]),
        ..LoadOptions::default()
    };
    assert_eq!(Config::load(options).unwrap().server.port, 4201);
}

#[test]
fn legacy_variables_map_to_typed_settings() {
    let options = LoadOptions {
        env: env(&[
            ("MCP_HOST", "0.0.0.0"),
            ("RUNNER_TIMEOUT_MS", "60000"),
            ("RUNNER_CPU_LIMIT", "2.0"),
            ("RUNNER_MEMORY_LIMIT", "2g"),
            ("WORKSPACE_DIR", "/srv/work"),
            ("DEBUG", "true"),
            ("LETTA_API_URL", "http://127.0.0.1:8283"),
            ("LETTA_API_TOKEN", "sekrit"),
            ("ENFORCE_IDEMPOTENCY", "false"),
        ]),
        ..LoadOptions::default()
    };
    let config = Config::load(options).unwrap();
    assert_eq!(config.server.host, "0.0.0.0");
    assert_eq!(config.tasks.default_timeout.as_millis(), 60_000);
    assert_eq!(config.runner.cpu_limit, Some(2.0));
    assert_eq!(config.runner.memory_limit, Some(ByteSize(2 << 30)));
    assert_eq!(config.workspace_dir, PathBuf::from("/srv/work"));
    assert_eq!(config.log.level, LogLevel::Debug);
    assert_eq!(
        config.letta.api_token.as_ref().map(Secret::expose),
        Some("sekrit")
    );
    assert!(!config.features.enforce_idempotency);
    let shown = config
        .effective
        .iter()
        .find(|e| e.key == "letta.api_token")
        .unwrap();
    assert_eq!(shown.value, "********");
}

#[test]
fn debug_false_leaves_level_alone() {
    let options = LoadOptions {
        env: env(&[("DEBUG", "false"), ("HANDOFF_LOG_LEVEL", "warn")]),
        ..LoadOptions::default()
    };
    assert_eq!(Config::load(options).unwrap().log.level, LogLevel::Warn);
    let options = LoadOptions {
        env: env(&[("DEBUG", "false")]),
        ..LoadOptions::default()
    };
    assert_eq!(Config::load(options).unwrap().log.level, LogLevel::Info);
}

#[test]
fn invalid_values_name_their_variable() {
    let cases = [
        ("MCP_PORT", "abc", "MCP_PORT"),
        ("MCP_PORT", "70000", "MCP_PORT"),
        ("MAX_CONCURRENT_TASKS", "NaN", "MAX_CONCURRENT_TASKS"),
        ("MAX_CONCURRENT_TASKS", "0", "MAX_CONCURRENT_TASKS"),
        ("RUNNER_TIMEOUT_MS", "-5", "RUNNER_TIMEOUT_MS"),
        ("RUNNER_CPU_LIMIT", "lots", "RUNNER_CPU_LIMIT"),
        ("RUNNER_MEMORY_LIMIT", "2x", "RUNNER_MEMORY_LIMIT"),
        ("DEBUG", "maybe", "DEBUG"),
        ("LETTA_API_URL", "letta.local", "LETTA_API_URL"),
        (
            "HANDOFF_ALLOWED_ORIGINS",
            "localhost",
            "HANDOFF_ALLOWED_ORIGINS",
        ),
        ("HANDOFF_LOG_FORMAT", "xml", "HANDOFF_LOG_FORMAT"),
    ];
    for (var, value, named) in cases {
        let options = LoadOptions {
            env: env(&[(var, value)]),
            ..LoadOptions::default()
        };
        let err = Config::load(options).expect_err(var).to_string();
        assert!(err.contains(named), "{var}={value}: {err}");
        assert!(err.contains(value), "{var}={value}: {err}");
    }
}

#[test]
fn invalid_secret_is_masked_in_the_error() {
    let options = LoadOptions {
        env: env(&[("HANDOFF_AUTH_TOKEN", "   ")]),
        ..LoadOptions::default()
    };
    let err = Config::load(options).unwrap_err().to_string();
    assert!(err.contains("HANDOFF_AUTH_TOKEN"), "{err}");
    assert!(err.contains("********"), "{err}");
}

#[test]
fn secrets_inside_json_settings_are_masked_where_shown_but_kept_for_use() {
    let opencode = r#"{"provider":{"p":{"options":{"apiKey":"sk-inline-1","headers":{"x-api-key":"sk-head-2"}}}}}"#;
    let config = Config::load(LoadOptions {
        env: env(&[
            ("HANDOFF_OPENCODE_CONFIG", opencode),
            (
                "HANDOFF_OPENCODE_URL",
                "http://opencode:pw-3@127.0.0.1:4096",
            ),
        ]),
        ..LoadOptions::default()
    })
    .unwrap();
    let shown = serde_json::to_string(&config.effective).unwrap();
    for secret in ["sk-inline-1", "sk-head-2", "pw-3"] {
        assert!(!shown.contains(secret), "{secret} shown: {shown}");
    }
    assert!(shown.contains("apiKey"), "{shown}");
    assert_eq!(
        config.executors.opencode.config_json.as_deref(),
        Some(opencode),
        "the executor still gets the real config"
    );
    // A value refused for its shape is masked in the error as well.
    let err = Config::load(LoadOptions {
        env: env(&[("HANDOFF_OPENCODE_CONFIG", r#"[{"apiKey":"sk-in-error-4"}]"#)]),
        ..LoadOptions::default()
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("HANDOFF_OPENCODE_CONFIG"), "{err}");
    assert!(!err.contains("sk-in-error-4"), "{err}");
}

#[test]
fn invalid_file_value_names_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(&dir, "h.toml", "[server]\nport = \"high\"\n");
    let options = LoadOptions {
        config_file: Some(file),
        ..LoadOptions::default()
    };
    let err = Config::load(options).unwrap_err().to_string();
    assert!(err.contains("server.port in"), "{err}");
    assert!(err.contains("h.toml"), "{err}");
}

#[test]
fn unknown_file_key_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(&dir, "h.toml", "[server]\nprot = 1\n");
    let options = LoadOptions {
        config_file: Some(file),
        ..LoadOptions::default()
    };
    let err = Config::load(options).unwrap_err();
    assert!(
        matches!(err, ConfigError::UnknownKey { ref key, .. } if key == "server.prot"),
        "{err}"
    );
}

#[test]
fn explicit_config_file_must_exist_default_one_may_not() {
    let options = LoadOptions {
        config_file: Some(PathBuf::from("/nonexistent/handoff.toml")),
        ..LoadOptions::default()
    };
    assert!(matches!(
        Config::load(options),
        Err(ConfigError::Read { .. })
    ));
    let options = LoadOptions {
        default_config_file: Some(PathBuf::from("/nonexistent/handoff.toml")),
        ..LoadOptions::default()
    };
    assert!(Config::load(options).is_ok());
}

#[test]
fn non_loopback_bind_name_is_an_allowed_host() {
    let options = LoadOptions {
        env: env(&[("MCP_HOST", "handoff.internal")]),
        ..LoadOptions::default()
    };
    let config = Config::load(options).unwrap();
    assert!(
        config
            .server
            .allowed_hosts
            .contains(&"handoff.internal".to_owned())
    );
}

#[test]
fn command_executor_argv_from_json_words_or_toml() {
    let load = |pairs: &[(&str, &str)]| {
        Config::load(LoadOptions {
            env: env(pairs),
            ..LoadOptions::default()
        })
    };
    let json = load(&[("HANDOFF_COMMAND_ARGV", r#"["my agent", "-p", "{prompt}"]"#)]).unwrap();
    let command = json.executors.command.unwrap();
    assert_eq!(command.argv, ["my agent", "-p", "{prompt}"]);
    assert_eq!(command.prompt_via, crate::PromptVia::Stdin);
    assert!(!command.messages_via_stdin);
    let words = load(&[("HANDOFF_COMMAND_ARGV", "cat -")]).unwrap();
    assert_eq!(words.executors.command.unwrap().argv, ["cat", "-"]);
    assert!(load(&[]).unwrap().executors.command.is_none());
    for bad in ["[]", "[1, 2]", "   ", "[\"unterminated"] {
        let err = load(&[("HANDOFF_COMMAND_ARGV", bad)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("HANDOFF_COMMAND_ARGV"), "{bad}: {err}");
    }

    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "handoff.toml",
        "[executors.command]\nargv = [\"bash\", \"-c\", \"{prompt}\"]\nprompt_via = \"argument\"\n",
    );
    let from_file = Config::load(LoadOptions {
        config_file: Some(file),
        ..LoadOptions::default()
    })
    .unwrap();
    let command = from_file.executors.command.unwrap();
    assert_eq!(command.argv, ["bash", "-c", "{prompt}"]);
    assert_eq!(command.prompt_via, crate::PromptVia::Argument);
}

#[test]
fn the_evaluator_reads_its_key_from_the_named_variable_and_judging_needs_a_model() {
    let options = LoadOptions {
        env: env(&[
            ("HANDOFF_COMPLETION_POLICY", "judge"),
            ("HANDOFF_EVALUATOR_PROVIDER", "gemini"),
            ("HANDOFF_EVALUATOR_MODEL", "gemini-pro"),
            ("HANDOFF_EVALUATOR_API_KEY_ENV", "MY_GEMINI_KEY"),
            ("MY_GEMINI_KEY", "g-secret"),
        ]),
        ..LoadOptions::default()
    };
    let config = Config::load(options).unwrap();
    let llm = config.evaluator.llm().unwrap();
    assert_eq!(llm.api_key.as_deref(), Some("g-secret"));
    assert_eq!(llm.model, "gemini-pro");
    let without = LoadOptions {
        env: env(&[("HANDOFF_COMPLETION_POLICY", "manager")]),
        ..LoadOptions::default()
    };
    let err = Config::load(without).unwrap_err().to_string();
    assert!(
        err.contains("HANDOFF_COMPLETION_POLICY") && err.contains("evaluator.provider"),
        "{err}"
    );
}

#[test]
fn connection_limits_have_defaults_env_overrides_and_refuse_zero() {
    let server = Config::load(LoadOptions::default()).unwrap().server;
    assert_eq!(server.header_read_timeout, Duration::from_secs(10));
    assert_eq!(server.body_read_timeout, Duration::from_secs(30));
    assert_eq!(server.keep_alive_timeout, Duration::from_secs(60));
    assert_eq!(server.max_connections, 512);
    let server = Config::load(LoadOptions {
        env: env(&[
            ("HANDOFF_HEADER_READ_TIMEOUT_SECS", "2"),
            ("HANDOFF_BODY_READ_TIMEOUT_SECS", "3"),
            ("HANDOFF_KEEP_ALIVE_TIMEOUT_SECS", "4"),
            ("HANDOFF_MAX_CONNECTIONS", "5"),
        ]),
        ..LoadOptions::default()
    })
    .unwrap()
    .server;
    assert_eq!(server.header_read_timeout, Duration::from_secs(2));
    assert_eq!(server.body_read_timeout, Duration::from_secs(3));
    assert_eq!(server.keep_alive_timeout, Duration::from_secs(4));
    assert_eq!(server.max_connections, 5);
    // Zero would mean "no limit" to a reader and "close at once" to the server: refused.
    for var in [
        "HANDOFF_HEADER_READ_TIMEOUT_SECS",
        "HANDOFF_BODY_READ_TIMEOUT_SECS",
        "HANDOFF_KEEP_ALIVE_TIMEOUT_SECS",
        "HANDOFF_MAX_CONNECTIONS",
    ] {
        let err = Config::load(LoadOptions {
            env: env(&[(var, "0")]),
            ..LoadOptions::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains(var), "{err}");
    }
}

#[test]
fn session_limits_have_defaults_env_overrides_and_refuse_zero() {
    let server = Config::load(LoadOptions::default()).unwrap().server;
    assert_eq!(server.unused_session_timeout, Duration::from_secs(30));
    assert_eq!(server.max_sessions, 1024);
    assert_eq!(server.max_sessions_per_client, 64);
    let server = Config::load(LoadOptions {
        env: env(&[
            ("HANDOFF_UNUSED_SESSION_TIMEOUT_SECS", "2"),
            ("HANDOFF_MAX_SESSIONS", "3"),
            ("HANDOFF_MAX_SESSIONS_PER_CLIENT", "1"),
        ]),
        ..LoadOptions::default()
    })
    .unwrap()
    .server;
    assert_eq!(server.unused_session_timeout, Duration::from_secs(2));
    assert_eq!(server.max_sessions, 3);
    assert_eq!(server.max_sessions_per_client, 1);
    for var in [
        "HANDOFF_UNUSED_SESSION_TIMEOUT_SECS",
        "HANDOFF_MAX_SESSIONS",
        "HANDOFF_MAX_SESSIONS_PER_CLIENT",
    ] {
        let err = Config::load(LoadOptions {
            env: env(&[(var, "0")]),
            ..LoadOptions::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains(var), "{err}");
    }
}

#[test]
fn a_public_url_is_checked_trimmed_and_its_host_accepted() {
    let load = |pairs: &[(&str, &str)]| {
        Config::load(LoadOptions {
            env: env(pairs),
            ..LoadOptions::default()
        })
    };
    let server = load(&[("HANDOFF_PUBLIC_URL", "https://handoff.example.com/")])
        .unwrap()
        .server;
    assert_eq!(
        server.public_url.as_deref(),
        Some("https://handoff.example.com")
    );
    assert!(
        server
            .allowed_hosts
            .contains(&"handoff.example.com".to_owned())
    );
    assert_eq!(load(&[]).unwrap().server.public_url, None);
    let err = load(&[("HANDOFF_PUBLIC_URL", "handoff.example.com")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("HANDOFF_PUBLIC_URL"), "{err}");
}

#[test]
fn the_tool_prefix_defaults_to_handoff_and_refuses_bad_names() {
    let load = |pairs: &[(&str, &str)]| {
        Config::load(LoadOptions {
            env: env(pairs),
            ..LoadOptions::default()
        })
    };
    assert_eq!(load(&[]).unwrap().letta.tool_prefix, "handoff");
    let letta = load(&[("HANDOFF_LETTA_TOOL_PREFIX", "handoff_b")])
        .unwrap()
        .letta;
    assert_eq!(letta.tool_prefix, "handoff_b");
    let err = load(&[("HANDOFF_LETTA_TOOL_PREFIX", "Hand-Off")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("HANDOFF_LETTA_TOOL_PREFIX"), "{err}");
}

#[test]
fn the_gateway_token_is_the_auth_token_else_a_gateway_entry() {
    let load = |pairs: &[(&str, &str)]| {
        Config::load(LoadOptions {
            env: env(pairs),
            ..LoadOptions::default()
        })
        .unwrap()
        .server
    };
    assert!(load(&[]).gateway_token().is_none());
    let tokens = r#"[{"token":"agent-token-aaaaaaaa","role":"agent","agent_id":"agent-a"},
                     {"token":"gateway-token-bbbbbbbb","role":"gateway"}]"#;
    let server = load(&[("HANDOFF_AUTH_TOKENS", tokens)]);
    let expose = |s: Option<&crate::Secret>| s.map(|s| s.expose().to_owned());
    assert_eq!(
        expose(server.gateway_token()).as_deref(),
        Some("gateway-token-bbbbbbbb")
    );
    assert_eq!(
        expose(server.agent_token("agent-a")).as_deref(),
        Some("agent-token-aaaaaaaa")
    );
    assert_eq!(server.agent_token("agent-b"), None);
    let server = load(&[
        ("HANDOFF_AUTH_TOKENS", tokens),
        ("HANDOFF_AUTH_TOKEN", "plain-gateway-cccccccc"),
    ]);
    assert_eq!(
        expose(server.gateway_token()).as_deref(),
        Some("plain-gateway-cccccccc")
    );
}

#[test]
fn notifying_after_a_sync_result_is_off_unless_asked_for() {
    let load = |pairs: &[(&str, &str)]| {
        Config::load(LoadOptions {
            env: env(pairs),
            ..LoadOptions::default()
        })
    };
    assert!(!load(&[]).unwrap().letta.notify_sync);
    let on = load(&[("HANDOFF_LETTA_NOTIFY_SYNC", "true")]).unwrap();
    assert!(on.letta.notify_sync);
    let err = load(&[("HANDOFF_LETTA_NOTIFY_SYNC", "sometimes")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("HANDOFF_LETTA_NOTIFY_SYNC"), "{err}");
}

#[test]
fn acp_agents_from_file_tables_or_json_and_their_errors_name_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "handoff.toml",
        "[executors.acp.opencode-acp]\nargv = [\"opencode\", \"acp\"]\nisolation = \"sandbox\"\n\n[executors.acp.codex-acp]\nargv = [\"codex-acp\"]\nenv = { INITIAL_AGENT_MODE = \"read-only\" }\n",
    );
    let from_file = Config::load(LoadOptions {
        config_file: Some(file),
        ..LoadOptions::default()
    })
    .unwrap();
    let names: Vec<&str> = from_file
        .executors
        .acp
        .0
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["codex-acp", "opencode-acp"]);
    assert_eq!(
        from_file.executors.acp.0[0].env,
        [("INITIAL_AGENT_MODE".to_owned(), "read-only".to_owned())]
    );
    let load = |pairs: &[(&str, &str)]| {
        Config::load(LoadOptions {
            env: env(pairs),
            ..LoadOptions::default()
        })
    };
    let json = load(&[(
        "HANDOFF_ACP_EXECUTORS",
        r#"{"gemini": {"argv": ["gemini", "--experimental-acp"]}}"#,
    )])
    .unwrap();
    assert_eq!(
        json.executors.acp.0[0].argv,
        ["gemini", "--experimental-acp"]
    );
    assert!(load(&[]).unwrap().executors.acp.0.is_empty());
    let err = load(&[("HANDOFF_ACP_EXECUTORS", r#"{"claude": {"argv": ["x"]}}"#)])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("HANDOFF_ACP_EXECUTORS") && err.contains("built-in"),
        "{err}"
    );
    // The value holds keys (agents' env, MCP servers' env and headers): an error names the
    // field, never echoes the payload.
    let err = load(&[(
        "HANDOFF_ACP_EXECUTORS",
        r#"{"a": {"argv": ["x"], "mcp_servers": [{"name": "", "command": "x", "env": {"K": "s3cret-key"}}]}}"#,
    )])
    .unwrap_err()
    .to_string();
    assert!(err.contains("executors.acp.a.mcp_servers[0].name"), "{err}");
    assert!(!err.contains("s3cret-key"), "{err}");
}

#[test]
fn heartbeats_and_leases_have_defaults_and_expiry_covers_two_beats() {
    let instance = Config::load(LoadOptions::default()).unwrap().instance;
    assert_eq!(instance.heartbeat, Duration::from_secs(5));
    assert_eq!(instance.lease_expiry, Duration::from_secs(15));
    let instance = Config::load(LoadOptions {
        env: env(&[
            ("HANDOFF_HEARTBEAT_MS", "200"),
            ("HANDOFF_LEASE_EXPIRY_MS", "1000"),
        ]),
        ..LoadOptions::default()
    })
    .unwrap()
    .instance;
    assert_eq!(instance.heartbeat, Duration::from_millis(200));
    assert_eq!(instance.lease_expiry, Duration::from_secs(1));
    for pairs in [
        [
            ("HANDOFF_HEARTBEAT_MS", "0"),
            ("HANDOFF_LEASE_EXPIRY_MS", "1000"),
        ],
        [
            ("HANDOFF_HEARTBEAT_MS", "600"),
            ("HANDOFF_LEASE_EXPIRY_MS", "1000"),
        ],
    ] {
        let err = Config::load(LoadOptions {
            env: env(&pairs),
            ..LoadOptions::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("HANDOFF_"), "{err}");
    }
}

#[test]
fn a_calls_cost_comes_from_its_model_price_then_the_flat_one_then_the_list() {
    let tokens = |input, output| crate::CallTokens {
        input,
        output,
        cached: 0,
    };
    let models = |pairs: &[(&str, &str)]| {
        Config::load(LoadOptions {
            env: env(pairs),
            ..LoadOptions::default()
        })
        .map(|c| c.models)
    };
    let listed = models(&[]).unwrap();
    assert_eq!(
        listed.cost("default", Some("gpt-4.1"), tokens(1_000_000, 0)),
        2.0
    );
    assert_eq!(
        listed.cost("default", Some("my-local-model"), tokens(1_000_000, 0)),
        0.0
    );
    assert_eq!(listed.cost("default", None, tokens(1_000_000, 0)), 0.0);
    let provider = ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1");
    let flat = models(&[provider, ("HANDOFF_MODELS_PRICE_OUTPUT", "1")]).unwrap();
    assert_eq!(
        flat.cost("default", Some("gpt-4.1"), tokens(1_000_000, 1_000_000)),
        1.0
    );
    let priced = models(&[
        provider,
        ("HANDOFF_MODELS_PRICE_OUTPUT", "1"),
        (
            "HANDOFF_MODELS_PRICES",
            r#"{"gpt-4.1": {"input": 3, "output": 0}}"#,
        ),
    ])
    .unwrap();
    assert_eq!(
        priced.cost(
            "default",
            Some("gpt-4.1-2025"),
            tokens(1_000_000, 1_000_000)
        ),
        3.0
    );
    assert_eq!(
        priced.cost("default", Some("other"), tokens(0, 1_000_000)),
        1.0
    );
    let bad = models(&[(
        "HANDOFF_MODELS_PRICES",
        r#"{"m": {"input": -1, "output": 1}}"#,
    )]);
    let err = bad.unwrap_err().to_string();
    assert!(err.contains("models.prices"), "{err}");
}

#[test]
fn named_providers_join_the_default_one_and_calls_route_by_model_and_wire() {
    use crate::{KeySource, ModelWire, RouteError};
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("anthropic.key");
    std::fs::write(&key_file, "sk-ant-file\n").unwrap();
    std::fs::set_permissions(
        &key_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let providers = format!(
        r#"{{"claude": {{"url": "http://127.0.0.1:8", "wire": "anthropic", "key_file": "{}", "model": "sonnet"}}, "local": {{"url": "http://127.0.0.1:7/v1", "key_env": "LOCAL_KEY"}}}}"#,
        key_file.display()
    );
    let config = Config::load(LoadOptions {
        env: env(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1/"),
            ("HANDOFF_MODELS_PROVIDERS", &providers),
            ("OPENAI_API_KEY", "sk-default"),
            ("LOCAL_KEY", "sk-local"),
        ]),
        ..LoadOptions::default()
    })
    .unwrap();
    let models = &config.models;
    let names: Vec<&str> = models.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["default", "claude", "local"]);
    assert_eq!(models.providers[0].url, "http://127.0.0.1:9/v1");
    assert_eq!(
        models.providers[0].key.as_ref().unwrap().expose(),
        "sk-default"
    );
    assert_eq!(
        models.providers[1].key.as_ref().unwrap().expose(),
        "sk-ant-file"
    );
    assert_eq!(
        models.providers[2].key.as_ref().unwrap().expose(),
        "sk-local"
    );
    assert_eq!(models.key_envs(), ["OPENAI_API_KEY", "LOCAL_KEY"]);
    let shared_variable = Config::load(LoadOptions {
        env: env(&[
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            (
                "HANDOFF_MODELS_PROVIDERS",
                r#"{"a": {"url": "http://x", "key_env": "A_KEY"}, "b": {"url": "http://y"}}"#,
            ),
        ]),
        ..LoadOptions::default()
    })
    .unwrap();
    assert_eq!(
        shared_variable.models.key_envs(),
        ["OPENAI_API_KEY", "A_KEY"],
        "a variable two providers read is listed once, not only when they are next to each other"
    );
    assert_eq!(models.key_files(), [key_file.as_path()]);
    let to = |wire, model| models.route(wire, model).map(|(p, m)| (p.name.as_str(), m));
    assert_eq!(to(ModelWire::OpenAi, Some("gpt")), Ok(("default", None)));
    assert_eq!(
        to(ModelWire::OpenAi, Some("local/q")),
        Ok(("local", Some("q")))
    );
    assert_eq!(
        to(ModelWire::OpenAi, Some("Qwen/Qwen3-8B")),
        Ok(("default", None)),
        "a slash that names no provider is part of the model's name"
    );
    assert_eq!(to(ModelWire::Anthropic, Some("x")), Ok(("claude", None)));
    assert!(matches!(
        to(ModelWire::Anthropic, Some("local/q")),
        Err(RouteError::WrongWire { .. })
    ));
    assert_eq!(
        models.model_for(Some(ModelWire::Anthropic)).as_deref(),
        Some("claude/sonnet")
    );
    assert_eq!(models.model_for(Some(ModelWire::OpenAi)), None);
    let shown = config
        .effective
        .iter()
        .find(|s| s.key == "models.providers")
        .map(|s| s.value.clone())
        .unwrap();
    assert!(!shown.contains("sk-"), "{shown}");
    assert!(shown.contains("LOCAL_KEY"), "{shown}");
    // Only named providers, no default: the gateway still serves, on their wires.
    let only = Config::load(LoadOptions {
        env: env(&[("HANDOFF_MODELS_PROVIDERS", &providers)]),
        ..LoadOptions::default()
    })
    .unwrap();
    assert!(only.models.gateway_on());
    assert_eq!(
        only.models.route(ModelWire::OpenAi, None).unwrap().0.name,
        "local"
    );
    let _ = KeySource::Env(String::new());
}

#[test]
fn a_key_file_that_cannot_be_used_is_a_config_error_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open.key");
    std::fs::write(&open, "sk-open").unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let load = |pairs: &[(&str, &str)]| {
        Config::load(LoadOptions {
            env: env(pairs),
            ..LoadOptions::default()
        })
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    let url = ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1");
    let path = open.display().to_string();
    let err = load(&[url, ("HANDOFF_MODELS_PROVIDER_KEY_FILE", &path)]);
    assert!(
        err.contains("models.provider_key_file") && err.contains("chmod 600"),
        "{err}"
    );
    assert!(!err.contains("sk-open"), "{err}");
    let both = load(&[
        url,
        ("HANDOFF_MODELS_PROVIDER_KEY_FILE", &path),
        ("HANDOFF_MODELS_PROVIDER_KEY_ENV", "K"),
    ]);
    assert!(both.contains("not both"), "{both}");
    let relative = load(&[url, ("HANDOFF_MODELS_PROVIDER_KEY_FILE", "key.txt")]);
    assert!(relative.contains("absolute"), "{relative}");
}

#[test]
fn the_judge_runs_on_a_models_provider_when_named() {
    let providers = r#"{"claude": {"url": "http://127.0.0.1:8", "wire": "anthropic", "key_env": "CLAUDE_KEY", "model": "sonnet"}}"#;
    let load = |extra: &[(&str, &str)]| {
        let mut pairs = vec![
            ("HANDOFF_MODELS_PROVIDER_URL", "http://127.0.0.1:9/v1"),
            ("HANDOFF_MODELS_PROVIDERS", providers),
            ("HANDOFF_MODELS_MODEL", "gpt"),
            ("OPENAI_API_KEY", "sk-default"),
            ("CLAUDE_KEY", "sk-claude"),
        ];
        pairs.extend_from_slice(extra);
        Config::load(LoadOptions {
            env: env(&pairs),
            ..LoadOptions::default()
        })
    };
    let judged = load(&[("HANDOFF_EVALUATOR_MODELS_PROVIDER", "claude")]).unwrap();
    let e = &judged.evaluator;
    assert_eq!(e.provider, Some(handoff_llm::Provider::Anthropic));
    assert_eq!(e.base_url.as_deref(), Some("http://127.0.0.1:8"));
    assert_eq!(e.api_key.as_ref().unwrap().expose(), "sk-claude");
    assert_eq!(e.model.as_deref(), Some("sonnet"));
    let default = load(&[
        ("HANDOFF_EVALUATOR_MODELS_PROVIDER", "default"),
        ("HANDOFF_COMPLETION_POLICY", "judge"),
    ])
    .unwrap();
    let e = &default.evaluator;
    assert_eq!(e.provider, Some(handoff_llm::Provider::OpenaiCompatible));
    assert_eq!(e.model.as_deref(), Some("gpt"), "models.model goes to it");
    assert_eq!(e.api_key.as_ref().unwrap().expose(), "sk-default");
    let err = load(&[("HANDOFF_EVALUATOR_MODELS_PROVIDER", "nope")])
        .map(drop)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("evaluator.models_provider") && err.contains("claude"),
        "{err}"
    );
}
