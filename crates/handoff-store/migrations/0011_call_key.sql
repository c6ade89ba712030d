-- The `execute_task` loop guard: a digest of the call's arguments, set on tasks submitted
-- through it, so identical submissions still unfinished are counted by the store (the same
-- count on every instance sharing it).
ALTER TABLE tasks ADD COLUMN call_key TEXT;
CREATE INDEX tasks_call_key ON tasks (agent_id, call_key, created_at) WHERE call_key IS NOT NULL;
