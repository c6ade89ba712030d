-- Each task's workspace memory block in its Letta agent and the completion notification owed to
-- that agent: the durable to-do list of the Letta integration, so block writes, the final
-- write, the one notification, detach and delete all resume after a restart. Not tied to the
-- task row by a foreign key: a block must still be detached and deleted on schedule even if the
-- task was purged first.

CREATE TABLE letta_workspaces (
    task_id        TEXT    PRIMARY KEY,
    agent_id       TEXT    NOT NULL,
    label          TEXT    NOT NULL,
    block_id       TEXT,
    phase          TEXT    NOT NULL,
    notify         TEXT    NOT NULL,
    notify_run_id  TEXT,
    writes         INTEGER NOT NULL DEFAULT 0,
    bytes_written  INTEGER NOT NULL DEFAULT 0,
    detach_at      INTEGER,
    delete_at      INTEGER,
    last_error     TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);

-- The sweeper's question: which records have work due.
CREATE INDEX letta_workspaces_phase ON letta_workspaces (phase, notify);
