-- Requests of a working executor waiting for the task owner's answer. Stored so status reads,
-- a restarted server and (later) other instances see what was asked; a task's rows go when it
-- reaches a final state or is re-queued (the store does that in the same transaction).

CREATE TABLE input_requests (
    task_id     TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    request_id  TEXT    NOT NULL,
    request     TEXT    NOT NULL,
    asked_at    INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (task_id, request_id)
);
