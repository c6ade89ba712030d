//! Which part of a task's diff a page shows, and reading it: a stored output is read part by
//! part with `get_task_history {artifact, artifact_offset}`, each part sized to pass the tool
//! output cap whole, so a huge diff is paged instead of cut (and never spilled to disk). The
//! page's query string says where its part starts, and in which file at which lines, so its
//! lines keep their numbers.

use handoff_protocol::{
    ArtifactKind, TaskId,
    tasks::{ArtifactView, GetTaskHistoryArgs},
};
use handoff_tools::ToolError;
use http::StatusCode;

use super::{Dashboard, auth::Viewer, diff_parse::Resume, forms::Refused, pages, views};

/// Characters of a path carried in a link, at most.
const PATH_CHARS: usize = 4096;

/// Where a page's part of the diff starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DiffAt {
    /// The byte offset in the stored diff (`diff_offset`).
    pub(crate) offset: u64,
    /// The file and lines it continues (`diff_file`, `diff_old`, `diff_new`, `diff_hunk`);
    /// none at the start of a file.
    pub(crate) resume: Option<Resume>,
}

impl DiffAt {
    /// Reads the query string of a task page; errors name the parameter, never its value.
    pub(crate) fn parse(query: Option<&str>) -> Result<Self, Refused> {
        let value = |name: &str| pages::query_value(query, name).filter(|v| !v.is_empty());
        let number = |name: &str| -> Result<Option<u64>, Refused> {
            value(name)
                .map(|v| {
                    v.parse::<u64>().map_err(|_| {
                        Refused::new(
                            StatusCode::BAD_REQUEST,
                            format!("Query parameter `{name}`: not a number."),
                        )
                    })
                })
                .transpose()
        };
        let offset = number("diff_offset")?.unwrap_or(0);
        let resume = match value("diff_file") {
            None => None,
            Some(path) if path.chars().count() > PATH_CHARS => {
                return Err(Refused::new(
                    StatusCode::BAD_REQUEST,
                    "Query parameter `diff_file`: longer than 4096 characters.",
                ));
            }
            Some(path) => Some(Resume {
                path,
                old: number("diff_old")?.unwrap_or(0),
                new: number("diff_new")?.unwrap_or(0),
                in_hunk: value("diff_hunk").as_deref() == Some("1"),
            }),
        };
        Ok(Self { offset, resume })
    }

    /// The query string that leads to this part (empty for the first).
    pub(crate) fn query(&self) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if self.offset > 0 {
            pairs.push(("diff_offset", self.offset.to_string()));
        }
        if let Some(resume) = &self.resume {
            pairs.push(("diff_file", resume.path.clone()));
            pairs.push(("diff_old", resume.old.to_string()));
            pairs.push(("diff_new", resume.new.to_string()));
            if resume.in_hunk {
                pairs.push(("diff_hunk", "1".to_owned()));
            }
        }
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }

    /// Task `id`'s page showing this part, at the diff.
    pub(crate) fn href(&self, id: &str) -> String {
        match self.query() {
            q if q.is_empty() => format!("{}#diff-section", views::task_href(id, "")),
            q => format!("{}?{q}#diff-section", views::task_href(id, "")),
        }
    }
}

/// The part of task `id`'s stored `kind` from byte `offset`; `None` when none is stored.
pub(crate) async fn read(
    dashboard: &Dashboard,
    viewer: &Viewer,
    id: &TaskId,
    kind: ArtifactKind,
    offset: u64,
) -> Result<Option<ArtifactView>, ToolError> {
    let args = GetTaskHistoryArgs {
        agent_id: None,
        task_id: id.clone(),
        events_offset: None,
        events_limit: None,
        include_artifacts: None,
        artifact: Some(kind),
        artifact_offset: Some(offset),
    };
    let history = dashboard.tools.call(viewer, &args).await?;
    Ok(history
        .artifacts
        .unwrap_or_default()
        .into_iter()
        .find(|a| a.kind == kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_read_from_and_written_to_links() {
        let at = DiffAt {
            offset: 4096,
            resume: Some(Resume {
                path: "src/a b&c.rs".into(),
                old: 10,
                new: 12,
                in_hunk: true,
            }),
        };
        let query = at.query();
        assert_eq!(
            query,
            "diff_offset=4096&diff_file=src%2Fa+b%26c.rs&diff_old=10&diff_new=12&diff_hunk=1"
        );
        assert_eq!(DiffAt::parse(Some(&query)).unwrap(), at);
        assert_eq!(
            DiffAt::default().href("task_x"),
            "/tasks/task_x#diff-section"
        );
        assert!(
            at.href("task_x")
                .starts_with("/tasks/task_x?diff_offset=4096&")
        );
        assert_eq!(DiffAt::parse(None).unwrap(), DiffAt::default());
    }

    #[test]
    fn bad_parameters_are_named_not_repeated() {
        for (query, name) in [
            ("diff_offset=-1", "diff_offset"),
            ("diff_offset=<b>", "diff_offset"),
            ("diff_file=x&diff_new=<b>", "diff_new"),
        ] {
            let refused = DiffAt::parse(Some(query)).unwrap_err();
            assert!(
                refused.message.contains(&format!("`{name}`")),
                "{}",
                refused.message
            );
            assert!(!refused.message.contains("<b>"));
        }
        let long = format!("diff_file={}", "x".repeat(PATH_CHARS + 1));
        assert!(DiffAt::parse(Some(&long)).is_err());
    }
}
