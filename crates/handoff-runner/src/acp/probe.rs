//! Asking an ACP agent who it is without starting a task: `initialize` alone, for `doctor`.

use std::{path::Path, process::Stdio, time::Duration};

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::Command,
};

use super::protocol;
use crate::RunnerError;

/// What an agent said about itself in answer to `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentIdentity {
    /// `agentInfo.name`, when given.
    pub name: Option<String>,
    /// `agentInfo.version`, when given.
    pub version: Option<String>,
    /// The protocol version it answered.
    pub protocol_version: Option<u64>,
}

/// Starts `argv` in `cwd` with `env` added, sends `initialize`, and returns the agent's answer
/// (the process is killed afterwards). Fails when it does not answer within `limit` or answers
/// with an error.
pub async fn probe(
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    limit: Duration,
) -> Result<AgentIdentity, RunnerError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(RunnerError::NotConfigured {
            executor: "acp".to_owned(),
            message: "argv is empty".to_owned(),
        });
    };
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .map_err(|source| RunnerError::Spawn {
            program: program.clone(),
            source,
        })?;
    let io = |message: String| RunnerError::Io {
        context: "asking the ACP agent to initialize",
        message,
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io("no pipes to the agent".to_owned()));
    };
    let answer = async {
        let line = format!("{}\n", protocol::initialize());
        stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| io(e.to_string()))?;
        let mut lines = BufReader::new(stdout).lines();
        while let Some(line) = lines.next_line().await.map_err(|e| io(e.to_string()))? {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("id").and_then(Value::as_str) == Some(protocol::INITIALIZE) {
                return Ok(message);
            }
        }
        Err(io("the agent exited without answering".to_owned()))
    };
    let message = tokio::time::timeout(limit, answer)
        .await
        .map_err(|_| io(format!("no answer within {limit:?}")))??;
    let _ = child.start_kill();
    if let Some(error) = message.get("error") {
        return Err(io(error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("an error without a message")
            .to_owned()));
    }
    let result = message.get("result").unwrap_or(&Value::Null);
    let info = |key: &str| {
        result
            .pointer(&format!("/agentInfo/{key}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(AgentIdentity {
        name: info("name"),
        version: info("version"),
        protocol_version: result.get("protocolVersion").and_then(Value::as_u64),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()]
    }

    #[tokio::test]
    async fn the_agents_answer_to_initialize_names_it() {
        let agent = sh(
            r#"read line; echo 'not json'; echo '{"jsonrpc":"2.0","method":"x"}'; echo '{"jsonrpc":"2.0","id":"handoff-initialize","result":{"protocolVersion":1,"agentInfo":{"name":"Fake","version":"1.2.3"}}}'; sleep 30"#,
        );
        let found = probe(&agent, &[], Path::new("/"), Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(found.name.as_deref(), Some("Fake"));
        assert_eq!(found.version.as_deref(), Some("1.2.3"));
        assert_eq!(found.protocol_version, Some(1));
    }

    #[tokio::test]
    async fn silence_and_errors_are_reported() {
        let silent = probe(
            &sh("sleep 30"),
            &[],
            Path::new("/"),
            Duration::from_millis(200),
        )
        .await
        .unwrap_err();
        assert!(silent.to_string().contains("no answer"), "{silent}");
        let refused = sh(
            r#"read line; echo '{"jsonrpc":"2.0","id":"handoff-initialize","error":{"code":1,"message":"nope"}}'"#,
        );
        let error = probe(&refused, &[], Path::new("/"), Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("nope"), "{error}");
    }
}
