//! What a task's model calls through the gateway took so far ([`Engine::model_usage`], shown
//! wherever a task is), and the running total the budget check reads (`gateway_total`): both
//! read from the task's last model call's event (each records the total so far, so a count
//! after a restart or takeover reads one event however long the task ran; calls recorded
//! before totals were are summed from the latest events), kept in memory where the total stays
//! current. Two calls of one task answered at once may record their totals out of order: a
//! count then misses the later one.
//!
//! A total stays current in a process only while every call of the task adds to it: while
//! this process runs the task (its calls come to this gateway), or once the task is over. A
//! task another instance runs is counted from its events at every look and never kept, so a
//! stale total never outlives the look that counted it; a kept total is of one claim (fence),
//! so a follow-up round or a takeover counts again.

use handoff_store::StoreError;
use handoff_task::{EventKind, ModelUsage, Task, TaskEvent};
use serde_json::Value;

use crate::{Engine, EngineError, gateway_state::Spent};

/// Events read to count what a task spent before this process saw it.
const EVENT_WINDOW: u32 = 5000;

impl Engine {
    /// What `task`'s model calls through the gateway took so far; `None` when it made none.
    /// The caller has read `task` with its ownership checks (this reads no more than the
    /// task's own events).
    pub async fn model_usage(&self, task: &Task) -> Result<Option<ModelUsage>, EngineError> {
        // Without a gateway no call is counted: a status read costs no read of the events.
        if !self.inner.config.models.gateway_on() {
            return Ok(None);
        }
        let spent = if self.keeps_total(task) {
            self.gateway_total(task).await?
        } else {
            self.count_spent(task).await?
        };
        Ok(usage_of(&spent))
    }

    /// `task`'s running total for its current claim: kept, or counted from its events and
    /// kept.
    pub(crate) async fn gateway_total(&self, task: &Task) -> Result<Spent, StoreError> {
        let kept = self.inner.gateway.spent(&task.id);
        if let Some(spent) = kept.filter(|s| s.fence == task.fence) {
            return Ok(spent);
        }
        let counted = self.count_spent(task).await?;
        Ok(self.inner.gateway.keep(&task.id, counted))
    }

    /// `task`'s total as its last model call recorded it; for calls recorded without one, counted
    /// from its latest events.
    async fn count_spent(&self, task: &Task) -> Result<Spent, StoreError> {
        let store = &self.inner.store;
        let last = store.last_event_of_kind(&task.id, EventKind::Model).await?;
        if let Some(total) = last.and_then(|e| total_of(&e.data, task.fence)) {
            return Ok(total);
        }
        let events = store.recent_events(&task.id, EVENT_WINDOW).await?;
        Ok(count(&events, task.fence))
    }

    /// Whether every further call of `task` adds to this process's total: it is over, or this
    /// process runs it (the only one, or the holder of its lease).
    fn keeps_total(&self, task: &Task) -> bool {
        if !task.status.is_active() || !self.inner.store.is_shared() {
            return true;
        }
        let me = self.inner.instance.id();
        task.lease.as_ref().is_some_and(|l| *l.owner == *me)
    }
}

/// The total of the `gateway_call`s among `events`, for claim `fence`.
pub(crate) fn count(events: &[TaskEvent], fence: i64) -> Spent {
    let mut spent = Spent {
        fence,
        ..Spent::default()
    };
    for call in events.iter().filter_map(|e| e.data.get("gateway_call")) {
        let tokens = |field: &str| call[field].as_u64().unwrap_or(0);
        spent.add(&Spent::call(
            tokens("input_tokens"),
            tokens("output_tokens"),
            tokens("cached_tokens"),
            call["cost_usd"].as_f64().unwrap_or(0.0),
        ));
    }
    spent
}

/// The running total a model call's event `data` records, as a total of claim `fence`.
fn total_of(data: &Value, fence: i64) -> Option<Spent> {
    let total: Spent = serde_json::from_value(data.get("total")?.clone()).ok()?;
    Some(Spent { fence, ..total })
}

/// What `spent` shows of a task; `None` without a call.
pub(crate) fn usage_of(spent: &Spent) -> Option<ModelUsage> {
    (spent.calls > 0).then_some(ModelUsage {
        calls: spent.calls,
        input_tokens: spent.input_tokens,
        output_tokens: spent.output_tokens,
        cached_tokens: spent.cached_tokens,
        cost_usd: spent.cost_usd,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_task::TaskId;
    use serde_json::json;

    use super::*;
    use crate::gateway_state::GatewayState;

    /// A `gateway_call` event's data, as `Engine::gateway_spent` writes it.
    fn call_data(input: u64, output: u64, cached: u64, cost_usd: f64) -> Value {
        json!({
            "gateway_call": {
                "wire": "openai_chat", "model": "m", "input_tokens": input,
                "output_tokens": output, "cached_tokens": cached, "usage_reported": true,
                "cost_usd": cost_usd, "status": 200, "latency_ms": 5,
            }
        })
    }

    fn event(seq: i64, data: Value) -> TaskEvent {
        TaskEvent {
            task_id: TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap(),
            seq,
            at: seq,
            kind: EventKind::Log,
            message: "m".into(),
            data,
        }
    }

    #[test]
    fn the_gateway_calls_among_a_tasks_events_add_up() {
        let events = [
            event(1, json!({"tokens": {"input": 99, "output": 99}})),
            event(2, call_data(100, 20, 40, 0.25)),
            event(3, json!({})),
            event(4, call_data(300, 50, 0, 0.5)),
        ];
        let spent = count(&events, 7);
        assert_eq!(
            (spent.calls, spent.tokens, spent.last_call, spent.fence),
            (2, 470, 350, 7)
        );
        assert_eq!(
            usage_of(&spent),
            Some(ModelUsage {
                calls: 2,
                input_tokens: 400,
                output_tokens: 70,
                cached_tokens: 40,
                cost_usd: 0.75,
            })
        );
    }

    #[test]
    fn a_recorded_total_reads_back_as_the_total_of_the_current_claim() {
        let mut spent = count(&[event(1, call_data(100, 20, 40, 0.25))], 3);
        spent.add(&Spent::call(7, 3, 0, 0.5));
        let data = json!({"total": serde_json::to_value(spent).unwrap(), "gateway_call": {}});
        assert_eq!(total_of(&data, 3), Some(spent));
        assert_eq!(total_of(&data, 4).map(|s| s.fence), Some(4));
        assert_eq!(total_of(&json!({"total": null}), 3), None);
        assert_eq!(total_of(&json!({"total": {"calls": 1}}), 3), None);
    }

    #[test]
    fn a_task_without_a_gateway_call_has_no_usage() {
        let events = [event(1, json!({"tokens": {"input": 5, "output": 5}}))];
        let spent = count(&events, 1);
        assert_eq!(
            spent,
            Spent {
                fence: 1,
                ..Spent::default()
            }
        );
        assert_eq!(usage_of(&spent), None);
        assert_eq!(usage_of(&count(&[], 1)), None);
    }

    #[test]
    fn a_kept_total_grows_by_each_call_of_its_claim_only() {
        let state = GatewayState::default();
        let id = TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap();
        let call = Spent::call(100, 20, 10, 0.5);
        // Nothing kept: a call has nothing to add to (the next look counts it from events).
        state.add(&id, 1, &call);
        assert_eq!(state.spent(&id), None);

        let counted = count(&[event(1, call_data(10, 5, 0, 0.25))], 1);
        assert_eq!(state.keep(&id, counted), counted);
        state.add(&id, 1, &call);
        let kept = state.spent(&id).unwrap();
        assert_eq!(
            (kept.calls, kept.tokens, kept.last_call, kept.cost_usd),
            (2, 135, 120, 0.75)
        );
        assert_eq!(
            (kept.input_tokens, kept.output_tokens, kept.cached_tokens),
            (110, 25, 10)
        );

        // A count of the same claim does not replace the total calls were added to.
        assert_eq!(state.keep(&id, counted), kept);
        // A call of another claim is not this total's; a count of the new claim replaces it.
        state.add(&id, 2, &call);
        assert_eq!(state.spent(&id), Some(kept));
        let recounted = count(&[], 2);
        assert_eq!(state.keep(&id, recounted), recounted);
    }
}
