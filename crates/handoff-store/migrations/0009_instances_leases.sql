-- Several instances (PostgreSQL) and the leases they hold; on SQLite one instance in practice,
-- with the same columns so both stores share their SQL.
CREATE TABLE instances (
    id        TEXT    PRIMARY KEY,
    host      TEXT    NOT NULL,
    pid       INTEGER NOT NULL,
    started   INTEGER NOT NULL,
    heartbeat INTEGER NOT NULL,
    draining  INTEGER NOT NULL DEFAULT 0
);

-- The instance running the task, until when, and the fencing token (incremented at each claim
-- and change of owner; every write about a running task is conditional on it).
ALTER TABLE tasks ADD COLUMN owner TEXT;
ALTER TABLE tasks ADD COLUMN lease_until INTEGER;
ALTER TABLE tasks ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_owner ON tasks (owner, status);
