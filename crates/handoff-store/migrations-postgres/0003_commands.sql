-- Commands for a run another instance holds: posted by the instance that took the call (with a
-- NOTIFY on `handoff_signals`), taken and answered by the lease holder (another NOTIFY).
CREATE TABLE commands (
    id      BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id TEXT    NOT NULL,
    target  TEXT    NOT NULL,
    body    TEXT    NOT NULL,
    created BIGINT  NOT NULL,
    taken   BIGINT,
    reply   TEXT,
    replied BIGINT
);
CREATE INDEX commands_pending ON commands (target, id) WHERE taken IS NULL;
CREATE INDEX commands_created ON commands (created);

-- The instance that last ran each task, kept after it ends (the lease's owner is cleared):
-- its disk holds the task's files, which other instances ask it for.
ALTER TABLE tasks ADD COLUMN ran_on TEXT;

-- The rescuer's duty, held by one instance for a term it renews at every pass: an instance cut
-- off from the database loses it when its term runs out (a session lock would stay with a
-- connection the database still believes open).
CREATE TABLE rescuer (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT    NOT NULL,
    until  BIGINT  NOT NULL
);

-- Per-agent submission rates across instances (GCRA): the theoretical arrival time of each
-- key's next request, advanced by one emission interval per accepted request.
CREATE TABLE rate_limits (
    key TEXT   PRIMARY KEY,
    tat BIGINT NOT NULL
);
