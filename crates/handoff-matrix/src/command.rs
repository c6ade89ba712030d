//! What a person types in a task's room: a control command (`!cancel`, `!pause`, `!resume`,
//! `!approve <request> [once|task|project]`, `!deny <request>`) or a message for the agent.

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// This request only.
    Once,
    /// The same permission for the rest of the task.
    Task,
    /// The same permission for the owner's later tasks in the project.
    Project,
}

impl Scope {
    /// The scope's name on the tools' wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Once => "once",
            Scope::Task => "task",
            Scope::Project => "project",
        }
    }
}

/// One parsed room message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Cancel the task.
    Cancel,
    /// Pause it.
    Pause,
    /// Resume it.
    Resume,
    /// Allow a pending request.
    Approve {
        /// The request's id.
        request: String,
        /// How far the approval reaches.
        scope: Scope,
    },
    /// Refuse a pending request.
    Deny {
        /// The request's id.
        request: String,
    },
    /// Show what the room accepts.
    Help,
    /// Anything else: a message for the running agent.
    Message(String),
}

/// Why a `!` line is not a command (the text is not repeated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown(pub &'static str);

/// The longest request id accepted.
const MAX_REQUEST_ID: usize = 128;

/// Reads one message body.
pub fn parse(body: &str) -> Result<Command, Unknown> {
    let text = body.trim();
    let Some(rest) = text.strip_prefix('!') else {
        return Ok(Command::Message(text.to_owned()));
    };
    let mut words = rest.split_whitespace();
    let verb = words.next().unwrap_or("").to_ascii_lowercase();
    let args: Vec<&str> = words.collect();
    let request = |args: &[&str]| -> Result<String, Unknown> {
        let id = args
            .first()
            .ok_or(Unknown("name the request: !approve <request-id>"))?;
        let ok = id.len() <= MAX_REQUEST_ID
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
        if ok {
            Ok((*id).to_owned())
        } else {
            Err(Unknown("a request id is letters, digits and _ - . :"))
        }
    };
    match (verb.as_str(), args.len()) {
        ("cancel", 0) => Ok(Command::Cancel),
        ("pause", 0) => Ok(Command::Pause),
        ("resume", 0) => Ok(Command::Resume),
        ("help", _) => Ok(Command::Help),
        ("approve", 1 | 2) => {
            let scope = match args.get(1).map(|s| s.to_ascii_lowercase()).as_deref() {
                None | Some("once") => Scope::Once,
                Some("task") => Scope::Task,
                Some("project") => Scope::Project,
                Some(_) => return Err(Unknown("the scope is once, task or project")),
            };
            Ok(Command::Approve {
                request: request(&args)?,
                scope,
            })
        }
        ("deny", 1) => Ok(Command::Deny {
            request: request(&args)?,
        }),
        ("cancel" | "pause" | "resume", _) => Err(Unknown("this command takes no arguments")),
        ("approve", _) => Err(Unknown("usage: !approve <request-id> [once|task|project]")),
        ("deny", _) => Err(Unknown("usage: !deny <request-id>")),
        _ => Err(Unknown(
            "commands are !cancel, !pause, !resume, !approve <request-id> [once|task|project], \
             !deny <request-id>, !help",
        )),
    }
}

/// What the room accepts, for `!help` and refusals.
pub const HELP: &str = "Commands: !cancel, !pause, !resume, !approve <request-id> \
    [once|task|project], !deny <request-id>. Anything else you write goes to the working agent.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_everything_else_is_a_message() {
        assert_eq!(parse("!cancel"), Ok(Command::Cancel));
        assert_eq!(parse("  !PAUSE "), Ok(Command::Pause));
        assert_eq!(parse("!resume"), Ok(Command::Resume));
        assert_eq!(parse("!help me"), Ok(Command::Help));
        assert_eq!(
            parse("!approve perm_1"),
            Ok(Command::Approve {
                request: "perm_1".into(),
                scope: Scope::Once
            })
        );
        assert_eq!(
            parse("!approve perm_1 Project"),
            Ok(Command::Approve {
                request: "perm_1".into(),
                scope: Scope::Project
            })
        );
        assert_eq!(
            parse("!deny perm_2"),
            Ok(Command::Deny {
                request: "perm_2".into()
            })
        );
        assert_eq!(
            parse("please also add tests"),
            Ok(Command::Message("please also add tests".into()))
        );
    }

    #[test]
    fn malformed_commands_are_refused_without_echo() {
        for bad in [
            "!cancel now",
            "!approve",
            "!approve p1 forever",
            "!approve <script>",
            "!deny",
            "!deny a b",
            "!rm -rf",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(
                !err.0.contains("script") && !err.0.contains("forever"),
                "{bad}"
            );
        }
    }
}
