-- Standing approvals an agent gave (task or project scope) and the audit trail of permission
-- decisions. Portable SQL, as in 0001. Approvals are not tied to a task row by a foreign key:
-- a project approval outlives the task it was given in (task-scope ones go with their task).

CREATE TABLE approvals (
    id          TEXT    PRIMARY KEY,
    agent_id    TEXT    NOT NULL,
    scope       TEXT    NOT NULL,
    task_id     TEXT    NOT NULL,
    project     TEXT    NOT NULL,
    permission  TEXT    NOT NULL,
    pattern     TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);

-- Approvals that apply to a task: its own, and its agent's for its project.
CREATE INDEX approvals_agent ON approvals (agent_id, scope, project);
CREATE INDEX approvals_task ON approvals (task_id);

CREATE TABLE audit (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    agent_id    TEXT,
    task_id     TEXT,
    source      TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    stage       TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    detail      TEXT    NOT NULL
);

CREATE INDEX audit_agent ON audit (agent_id, seq);
CREATE INDEX audit_task ON audit (task_id, seq);
