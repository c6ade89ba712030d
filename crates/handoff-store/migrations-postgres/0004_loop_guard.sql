-- The `execute_task` loop guard: a digest of the call's arguments, set on tasks submitted
-- through it, so identical submissions still unfinished are counted by the store (the same
-- count on every instance sharing it).
ALTER TABLE tasks ADD COLUMN call_key TEXT;
CREATE INDEX tasks_call_key ON tasks (agent_id, call_key, created_at) WHERE call_key IS NOT NULL;

-- The pipeline's loop guard on a shared store: each caller's recent changing calls (a digest
-- of tool and arguments), kept for the guard's window, so repeats count on every instance.
CREATE TABLE call_history (
    seq    BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    caller TEXT    NOT NULL,
    at     BIGINT  NOT NULL,
    key    TEXT    NOT NULL
);
CREATE INDEX call_history_caller ON call_history (caller, seq);
CREATE INDEX call_history_at ON call_history (at);
