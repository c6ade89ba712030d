-- list_tasks for an operator (every agent's tasks) with a status filter, as the dashboard's
-- state filter asks: the newest tasks in one state. Without it every task in that state was
-- read and sorted to find the page (100k completed tasks: ~110 ms); this index walks them
-- newest first and stops at the page's end.
CREATE INDEX tasks_status_seq ON tasks (status, queue_seq);
