//! How a rule's pattern matches what a request acts on. Paths are globs (`*` stops at `/`,
//! `**` crosses it, a pattern without `/` matches the basename at any depth); commands and
//! everything else are wildcards where `*` matches anything and `"git *"` also matches `git`.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use wildmatch::WildMatch;

/// Permissions whose patterns are file-system paths.
pub fn is_path_permission(permission: &str) -> bool {
    matches!(
        permission,
        "read" | "edit" | "write" | "list" | "external_directory"
    )
}

/// Permissions whose patterns are shell commands (split into parts before judging).
pub fn is_command_permission(permission: &str) -> bool {
    matches!(permission, "bash" | "shell")
}

/// A rule's pattern, compiled for both kinds of subject.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    any: bool,
    wildcard: WildMatch,
    /// `"git *"` also matches `git`: the pattern without its trailing `" *"`.
    bare: Option<WildMatch>,
    path: Option<PathPattern>,
}

#[derive(Debug, Clone)]
struct PathPattern {
    glob: GlobMatcher,
    basename_only: bool,
}

impl Pattern {
    pub(crate) fn new(pattern: &str) -> Self {
        let pattern = normalize_command(pattern);
        let bare = pattern
            .strip_suffix(" *")
            .map(|head| WildMatch::new(head.trim_end()));
        let path = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
            .ok()
            .map(|glob| PathPattern {
                glob: glob.compile_matcher(),
                basename_only: !pattern.contains('/'),
            });
        Self {
            any: pattern == "*",
            wildcard: WildMatch::new(&pattern),
            bare,
            path,
        }
    }

    /// Matches a command part or any non-path subject.
    pub(crate) fn matches_text(&self, subject: &str) -> bool {
        self.any
            || self.wildcard.matches(subject)
            || self.bare.as_ref().is_some_and(|b| b.matches(subject))
    }

    /// Matches a path; relative patterns also match an absolute path under `cwd`.
    pub(crate) fn matches_path(&self, subject: &str, cwd: Option<&str>) -> bool {
        if self.any {
            return true;
        }
        let Some(path) = &self.path else {
            return self.wildcard.matches(subject);
        };
        let subject_path = Path::new(subject);
        if path.basename_only {
            return subject_path
                .file_name()
                .is_some_and(|name| path.glob.is_match(name))
                || path.glob.is_match(subject);
        }
        if path.glob.is_match(subject_path) {
            return true;
        }
        cwd.and_then(|cwd| subject_path.strip_prefix(cwd).ok())
            .is_some_and(|relative| path.glob.is_match(relative))
    }
}

/// A command's program named by its basename (`/usr/bin/sudo x` → `sudo x`).
pub(crate) fn normalize_command(command: &str) -> String {
    let trimmed = command.trim();
    let (program, rest) = match trimmed.split_once(char::is_whitespace) {
        Some((program, rest)) => (program, Some(rest.trim_start())),
        None => (trimmed, None),
    };
    let program = match program.rsplit_once('/') {
        Some((_, base)) if !base.is_empty() && !program.contains('*') => base,
        _ => program,
    };
    match rest {
        Some(rest) if !rest.is_empty() => format!("{program} {rest}"),
        _ => program.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_stops_at_slash_and_double_star_crosses_it() {
        let one = Pattern::new("src/*.rs");
        assert!(one.matches_path("src/main.rs", None));
        assert!(!one.matches_path("src/a/main.rs", None));
        let two = Pattern::new("src/**/*.rs");
        assert!(two.matches_path("src/a/b/main.rs", None));
        assert!(two.matches_path("src/main.rs", None));
    }

    #[test]
    fn a_pattern_without_slash_matches_the_basename_at_any_depth() {
        let env = Pattern::new("*.env");
        assert!(env.matches_path("a/b/.env", None));
        assert!(env.matches_path("/srv/app/prod.env", None));
        assert!(!env.matches_path("a/b/env.txt", None));
    }

    #[test]
    fn relative_patterns_match_absolute_paths_under_the_working_directory() {
        let p = Pattern::new("src/*.rs");
        assert!(p.matches_path("/work/t1/src/lib.rs", Some("/work/t1")));
        assert!(!p.matches_path("/elsewhere/src/lib.rs", Some("/work/t1")));
    }

    #[test]
    fn git_star_matches_git_alone_and_star_crosses_spaces_in_commands() {
        let git = Pattern::new("git *");
        assert!(git.matches_text("git"));
        assert!(git.matches_text("git status --short"));
        assert!(!git.matches_text("gitk"));
        assert!(Pattern::new("rm *").matches_text("rm -rf a/b"));
    }

    #[test]
    fn programs_are_named_by_their_basename() {
        assert_eq!(normalize_command("/usr/bin/sudo  rm x"), "sudo rm x");
        assert_eq!(normalize_command("./run.sh"), "run.sh");
        assert_eq!(normalize_command("ls"), "ls");
        assert!(Pattern::new("/usr/bin/sudo *").matches_text("sudo ls"));
    }
}
