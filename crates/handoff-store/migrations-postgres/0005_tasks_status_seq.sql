-- list_tasks for an operator (every agent's tasks) with a status filter, as the dashboard's
-- state filter asks: the newest tasks in one state, walked newest first and cut at the page's
-- end instead of every task in that state read and sorted.
CREATE INDEX tasks_status_seq ON tasks (status, queue_seq);
