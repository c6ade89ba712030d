-- When the task's final result reached its caller inside the submitting call itself
-- (`execute_task {sync: true}`); NULL otherwise. Integrations read it so that a completion
-- message the caller no longer needs is not sent, even by a process restarted after the call.
ALTER TABLE tasks ADD COLUMN result_delivered_at INTEGER;
