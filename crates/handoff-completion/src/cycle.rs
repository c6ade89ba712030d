//! The cycle loop's decisions (docs/completion.md, Steps: Cycles): a stall counter that rises when
//! a cycle made no progress (the judge says so, the executor is stuck, or the diff and todo counts
//! did not change) and falls otherwise; at 2 stalls one re-plan, at 3 stalls after it — or at the
//! cycle limit — stop. A cycle found stuck (the detector fired, or the judge says so) is more
//! than a stall: it re-plans at once, and stuck again after the re-plan stops — so a coder that
//! repeats one message (the detector fires on its third, at cycle 3) stops by cycle 4.

use serde::{Deserialize, Serialize};

/// What one cycle looked like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleObservation {
    /// The judge (or the checks) found progress.
    pub progress: bool,
    /// The executor was found stuck.
    pub stuck: bool,
    /// Hash of the task's diff after the cycle.
    pub diff_hash: u64,
    /// (done, total) todos after the cycle.
    pub todos: (usize, usize),
}

/// What to do after a cycle that did not finish the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NextStep {
    /// Resume the executor with the targeted continuation prompt.
    Continue,
    /// Resume with a new plan (root cause + plan from the judge) — once per task.
    Replan,
    /// Give up: the executor is stuck.
    StopStuck,
    /// Give up: no cycles left.
    StopMaxCycles,
}

/// The stall counter and cycle budget of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleState {
    max_cycles: u32,
    cycle: u32,
    stalls: u32,
    replanned: bool,
    last: Option<(u64, (usize, usize))>,
}

impl CycleState {
    /// A task allowed `max_cycles` cycles (5 by default).
    pub fn new(max_cycles: u32) -> Self {
        Self {
            max_cycles: max_cycles.max(1),
            cycle: 0,
            stalls: 0,
            replanned: false,
            last: None,
        }
    }

    /// Cycles run so far.
    pub fn cycle(&self) -> u32 {
        self.cycle
    }

    /// The current stall count.
    pub fn stalls(&self) -> u32 {
        self.stalls
    }

    /// Records a finished, not-done cycle and decides what comes next.
    pub fn after(&mut self, seen: &CycleObservation) -> NextStep {
        self.cycle += 1;
        let unchanged = self.last == Some((seen.diff_hash, seen.todos));
        self.last = Some((seen.diff_hash, seen.todos));
        if !seen.progress || seen.stuck || unchanged {
            self.stalls += 1;
        } else {
            self.stalls = self.stalls.saturating_sub(1);
        }
        // Stuck is the truer verdict: it must not be reported as merely out of cycles.
        if self.replanned && (self.stalls >= 3 || seen.stuck) {
            return NextStep::StopStuck;
        }
        if self.cycle >= self.max_cycles {
            return NextStep::StopMaxCycles;
        }
        if !self.replanned && (self.stalls >= 2 || seen.stuck) {
            self.replanned = true;
            // The count starts over for the new plan.
            self.stalls = 0;
            return NextStep::Replan;
        }
        NextStep::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(progress: bool, diff: u64) -> CycleObservation {
        CycleObservation {
            progress,
            stuck: false,
            diff_hash: diff,
            todos: (0, 3),
        }
    }

    #[test]
    fn progress_keeps_going_until_the_cycle_limit() {
        let mut state = CycleState::new(3);
        assert_eq!(state.after(&seen(true, 1)), NextStep::Continue);
        assert_eq!(state.after(&seen(true, 2)), NextStep::Continue);
        assert_eq!(state.after(&seen(true, 3)), NextStep::StopMaxCycles);
    }

    #[test]
    fn the_stall_counter_rises_falls_and_floors_at_zero() {
        let mut state = CycleState::new(10);
        state.after(&seen(true, 1));
        assert_eq!(state.stalls(), 0);
        state.after(&seen(false, 2));
        assert_eq!(state.stalls(), 1);
        state.after(&seen(true, 3));
        assert_eq!(state.stalls(), 0);
        state.after(&seen(true, 4));
        assert_eq!(state.stalls(), 0);
    }

    #[test]
    fn an_unchanged_diff_and_todos_count_as_a_stall_even_if_the_judge_saw_progress() {
        let mut state = CycleState::new(10);
        state.after(&seen(true, 7));
        state.after(&seen(true, 7));
        assert_eq!(state.stalls(), 1);
    }

    #[test]
    fn two_stalls_replan_once_then_three_more_stop_as_stuck() {
        let mut state = CycleState::new(20);
        assert_eq!(state.after(&seen(false, 1)), NextStep::Continue);
        assert_eq!(state.after(&seen(false, 2)), NextStep::Replan);
        assert_eq!(state.after(&seen(false, 3)), NextStep::Continue);
        assert_eq!(state.after(&seen(false, 4)), NextStep::Continue);
        assert_eq!(state.after(&seen(false, 5)), NextStep::StopStuck);
    }

    #[test]
    fn stuck_is_reachable_within_the_default_five_cycles() {
        let mut state = CycleState::new(5);
        let steps: Vec<NextStep> = (1..=5).map(|n| state.after(&seen(false, n))).collect();
        assert_eq!(
            steps,
            [
                NextStep::Continue,
                NextStep::Replan,
                NextStep::Continue,
                NextStep::Continue,
                NextStep::StopStuck
            ]
        );
    }

    #[test]
    fn a_repeated_message_stops_as_stuck_by_cycle_four() {
        // The checks see progress (the diff never changes after the first cycle); the detector
        // fires from the third identical message on.
        let mut state = CycleState::new(5);
        let mut step = |n: u32| {
            state.after(&CycleObservation {
                stuck: n >= 3,
                ..seen(true, 1)
            })
        };
        let steps: Vec<NextStep> = (1..=4).map(&mut step).collect();
        assert_eq!(
            steps,
            [
                NextStep::Continue,
                NextStep::Continue,
                NextStep::Replan,
                NextStep::StopStuck
            ]
        );
    }

    #[test]
    fn a_task_that_keeps_progressing_still_stops_at_the_cycle_limit() {
        let mut state = CycleState::new(5);
        let last = (1..=5).map(|n| state.after(&seen(true, n))).last();
        assert_eq!(last, Some(NextStep::StopMaxCycles));
    }
}
