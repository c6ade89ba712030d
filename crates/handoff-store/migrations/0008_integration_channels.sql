-- What a chat integration (Matrix) must remember across restarts, kept generic so another
-- integration or store can reuse it: the channel (room) of each task and when it is to be
-- closed, the integration's read position (the Matrix sync token), and which incoming
-- commands were already applied, so that a restart neither misses nor replays one.

CREATE TABLE integration_channels (
    integration  TEXT    NOT NULL,
    task_id      TEXT    NOT NULL,
    channel_id   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    close_at     INTEGER,
    closed_at    INTEGER,
    PRIMARY KEY (integration, task_id)
);

CREATE UNIQUE INDEX integration_channels_channel ON integration_channels (integration, channel_id);

CREATE TABLE integration_cursors (
    integration  TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    value        TEXT    NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (integration, name)
);

CREATE TABLE integration_applied (
    integration  TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    applied_at   INTEGER NOT NULL,
    PRIMARY KEY (integration, key)
);
