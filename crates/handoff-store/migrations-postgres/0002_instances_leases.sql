-- Several Handoff instances on one database, and the leases they hold on running tasks.
CREATE TABLE instances (
    id        TEXT    PRIMARY KEY,
    host      TEXT    NOT NULL,
    pid       BIGINT  NOT NULL,
    started   BIGINT  NOT NULL,
    heartbeat BIGINT  NOT NULL,
    draining  BOOLEAN NOT NULL DEFAULT FALSE
);

-- The instance running the task, until when, and the fencing token (incremented at each claim
-- and change of owner; every write about a running task is conditional on it).
ALTER TABLE tasks ADD COLUMN owner TEXT;
ALTER TABLE tasks ADD COLUMN lease_until BIGINT;
ALTER TABLE tasks ADD COLUMN fence BIGINT NOT NULL DEFAULT 0;
CREATE INDEX tasks_owner ON tasks (owner, status);
