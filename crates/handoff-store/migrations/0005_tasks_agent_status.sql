-- list_tasks with a status filter: one agent's tasks in the asked states, newest first. With
-- only (agent_id, queue_seq) every task the agent ever had was visited to find the few running
-- ones; this index reaches them directly.
CREATE INDEX tasks_agent_status ON tasks (agent_id, status, queue_seq);
