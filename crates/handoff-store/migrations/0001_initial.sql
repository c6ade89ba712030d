-- Handoff's task store. Kept to portable SQL so a PostgreSQL store can use the same shape:
-- plain tables, integer Unix-millisecond timestamps, JSON as TEXT, booleans as 0/1 integers.
-- AUTOINCREMENT (BIGSERIAL / IDENTITY in PostgreSQL) is the only engine-specific piece: it
-- guarantees queue_seq is never reused, so FIFO order and list cursors stay stable after purges.

CREATE TABLE tasks (
    queue_seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT    NOT NULL UNIQUE,
    agent_id        TEXT    NOT NULL,
    description     TEXT    NOT NULL,
    executor        TEXT    NOT NULL,
    options         TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    priority        INTEGER NOT NULL DEFAULT 0,
    workdir         TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    started_at      INTEGER,
    completed_at    INTEGER,
    exit_code       INTEGER,
    exit_signal     INTEGER,
    error           TEXT,
    idempotency_key TEXT,
    metadata        TEXT    NOT NULL,
    runner_state    TEXT
);

-- claim_next: queued tasks by priority, FIFO within a priority.
CREATE INDEX tasks_claim ON tasks (status, priority DESC, queue_seq);
-- list_tasks for one agent, newest first.
CREATE INDEX tasks_agent ON tasks (agent_id, queue_seq);
-- purge_terminal: old finished tasks.
CREATE INDEX tasks_purge ON tasks (status, completed_at);

-- Keys are scoped per agent, so one agent's key can never reveal another agent's task.
CREATE TABLE idempotency_keys (
    agent_id   TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    task_id    TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, key)
);

-- Without it every purged task would scan the whole key table for the cascade.
CREATE INDEX idempotency_keys_task ON idempotency_keys (task_id);

CREATE TABLE task_events (
    task_id TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    kind    TEXT    NOT NULL,
    message TEXT    NOT NULL,
    data    TEXT    NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE task_artifacts (
    task_id    TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    kind       TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    capped     INTEGER NOT NULL,
    inline     BLOB,
    file_path  TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, kind),
    -- Exactly one of the two bodies, so a row always decodes to one ArtifactBody.
    CHECK ((inline IS NULL) <> (file_path IS NULL))
);
