-- Handoff's task store on PostgreSQL: the same tables as the SQLite migrations 0001-0008,
-- folded into one, with PostgreSQL's types (BIGINT timestamps and counters, BOOLEAN, BYTEA).
-- JSON stays TEXT so both stores read and write the same strings.

CREATE TABLE tasks (
    queue_seq           BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                  TEXT    NOT NULL UNIQUE,
    agent_id            TEXT    NOT NULL,
    description         TEXT    NOT NULL,
    executor            TEXT    NOT NULL,
    options             TEXT    NOT NULL,
    status              TEXT    NOT NULL,
    priority            BIGINT  NOT NULL DEFAULT 0,
    workdir             TEXT    NOT NULL,
    created_at          BIGINT  NOT NULL,
    started_at          BIGINT,
    completed_at        BIGINT,
    exit_code           BIGINT,
    exit_signal         BIGINT,
    error               TEXT,
    idempotency_key     TEXT,
    metadata            TEXT    NOT NULL,
    runner_state        TEXT,
    result_delivered_at BIGINT
);

CREATE INDEX tasks_claim ON tasks (status, priority DESC, queue_seq);
CREATE INDEX tasks_agent ON tasks (agent_id, queue_seq);
CREATE INDEX tasks_agent_status ON tasks (agent_id, status, queue_seq);
CREATE INDEX tasks_purge ON tasks (status, completed_at);

CREATE TABLE idempotency_keys (
    agent_id   TEXT   NOT NULL,
    key        TEXT   NOT NULL,
    task_id    TEXT   NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (agent_id, key)
);
CREATE INDEX idempotency_keys_task ON idempotency_keys (task_id);

CREATE TABLE task_events (
    task_id TEXT   NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    at      BIGINT NOT NULL,
    kind    TEXT   NOT NULL,
    message TEXT   NOT NULL,
    data    TEXT   NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE task_artifacts (
    task_id    TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    kind       TEXT    NOT NULL,
    size       BIGINT  NOT NULL,
    capped     BOOLEAN NOT NULL,
    inline     BYTEA,
    file_path  TEXT,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (task_id, kind),
    CHECK ((inline IS NULL) <> (file_path IS NULL))
);

CREATE TABLE approvals (
    id          TEXT   PRIMARY KEY,
    agent_id    TEXT   NOT NULL,
    scope       TEXT   NOT NULL,
    task_id     TEXT   NOT NULL,
    project     TEXT   NOT NULL,
    permission  TEXT   NOT NULL,
    pattern     TEXT   NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX approvals_agent ON approvals (agent_id, scope, project);
CREATE INDEX approvals_task ON approvals (task_id);

CREATE TABLE audit (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          BIGINT NOT NULL,
    agent_id    TEXT,
    task_id     TEXT,
    source      TEXT   NOT NULL,
    subject     TEXT   NOT NULL,
    outcome     TEXT   NOT NULL,
    stage       TEXT   NOT NULL,
    reason      TEXT   NOT NULL,
    detail      TEXT   NOT NULL
);
CREATE INDEX audit_agent ON audit (agent_id, seq);
CREATE INDEX audit_task ON audit (task_id, seq);

CREATE TABLE letta_workspaces (
    task_id        TEXT   PRIMARY KEY,
    agent_id       TEXT   NOT NULL,
    label          TEXT   NOT NULL,
    block_id       TEXT,
    phase          TEXT   NOT NULL,
    notify         TEXT   NOT NULL,
    notify_run_id  TEXT,
    writes         BIGINT NOT NULL DEFAULT 0,
    bytes_written  BIGINT NOT NULL DEFAULT 0,
    detach_at      BIGINT,
    delete_at      BIGINT,
    last_error     TEXT,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX letta_workspaces_phase ON letta_workspaces (phase, notify);

-- seq keeps insertion order among requests asked in the same millisecond (SQLite uses rowid).
CREATE TABLE input_requests (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY,
    task_id     TEXT   NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    request_id  TEXT   NOT NULL,
    request     TEXT   NOT NULL,
    asked_at    BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    PRIMARY KEY (task_id, request_id)
);

CREATE TABLE store_probe (
    id BIGINT PRIMARY KEY,
    at BIGINT NOT NULL
);

CREATE TABLE integration_channels (
    integration  TEXT   NOT NULL,
    task_id      TEXT   NOT NULL,
    channel_id   TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    close_at     BIGINT,
    closed_at    BIGINT,
    PRIMARY KEY (integration, task_id)
);
CREATE UNIQUE INDEX integration_channels_channel ON integration_channels (integration, channel_id);

CREATE TABLE integration_cursors (
    integration  TEXT   NOT NULL,
    name         TEXT   NOT NULL,
    value        TEXT   NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (integration, name)
);

CREATE TABLE integration_applied (
    integration  TEXT   NOT NULL,
    key          TEXT   NOT NULL,
    applied_at   BIGINT NOT NULL,
    PRIMARY KEY (integration, key)
);
