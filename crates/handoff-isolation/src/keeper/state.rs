//! The keeper's memory and rules: the guarded runs, the deadline, and what to freeze when.
//! Time comes in as an argument (milliseconds on `CLOCK_BOOTTIME`), so the rules are tested
//! with a clock of the test's choosing.

use std::{collections::HashMap, time::Duration};

use super::{
    FenceTarget, MAX_GUARDED, Order, Report,
    freeze::{Actuator, Means},
};

/// The longest wait between two looks at the clock while a deadline is ahead: timed waits run
/// on a clock that stops during suspend, the deadline's does not, so after a resume the
/// keeper would otherwise notice a passed deadline only as late as the suspend was long.
pub(crate) const LOOK_EVERY: Duration = Duration::from_millis(100);

/// One guarded run.
#[derive(Debug)]
struct Guarded {
    target: FenceTarget,
    /// The process group leader's start time when the run was guarded.
    leader: Option<u64>,
    held: Held,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Held {
    Running,
    Frozen(Means),
    /// Freezing failed (reported once); not tried again until thawed or given a new target.
    Failed,
}

/// The guarded runs and the deadline.
pub(crate) struct Keeper<A> {
    actuator: A,
    guarded: HashMap<String, Guarded>,
    deadline: Option<u64>,
}

impl<A: Actuator> Keeper<A> {
    /// A keeper with nothing guarded and no deadline.
    pub(crate) fn new(actuator: A) -> Self {
        Self {
            actuator,
            guarded: HashMap::new(),
            deadline: None,
        }
    }

    fn passed(&self, now: u64) -> bool {
        self.deadline.is_some_and(|deadline| now >= deadline)
    }

    /// Carries out `order` at time `now`, then freezes what is due.
    pub(crate) fn order(&mut self, order: Order, now: u64, reports: &mut Vec<Report>) {
        match order {
            Order::Guard { key, target } => self.guard(key, target, reports),
            // Not thawed: the server stops or has finished the run itself.
            Order::Release { key } => {
                self.guarded.remove(&key);
            }
            // A later deadline thaws nothing by itself: the server decides run by run.
            Order::Arm { until } => self.deadline = Some(until.boottime_millis()),
            Order::Disarm => self.deadline = None,
            Order::Thaw { key } => self.thaw(key, now, reports),
        }
        self.tick(now, reports);
    }

    fn guard(&mut self, key: String, target: FenceTarget, reports: &mut Vec<Report>) {
        if let Some(known) = self.guarded.get(&key)
            && known.target == target
        {
            return;
        }
        if !self.guarded.contains_key(&key) && self.guarded.len() >= MAX_GUARDED {
            reports.push(Report::Failed {
                key: Some(key),
                error: format!("not guarded: {MAX_GUARDED} runs are guarded already"),
            });
            return;
        }
        let leader = self.actuator.identify(&target);
        // A new target replaces the old one; a freeze of the old one is left as it is.
        self.guarded.insert(
            key,
            Guarded {
                target,
                leader,
                held: Held::Running,
            },
        );
    }

    fn thaw(&mut self, key: String, now: u64, reports: &mut Vec<Report>) {
        if self.passed(now) {
            // It would be frozen again at once.
            reports.push(Report::Failed {
                key: Some(key),
                error: "not thawed: the deadline has passed; arm a later one first".to_owned(),
            });
            return;
        }
        let Some(run) = self.guarded.get_mut(&key) else {
            reports.push(Report::Failed {
                key: Some(key),
                error: "not thawed: not guarded".to_owned(),
            });
            return;
        };
        if let Held::Frozen(means) = &run.held
            && let Err(error) = self.actuator.thaw(means)
        {
            reports.push(Report::Failed {
                key: Some(key),
                error: format!("not thawed: {error}"),
            });
            return;
        }
        run.held = Held::Running;
        reports.push(Report::Thawed { key });
    }

    /// Freezes every running guarded run once the deadline has passed at `now`.
    pub(crate) fn tick(&mut self, now: u64, reports: &mut Vec<Report>) {
        if !self.passed(now) {
            return;
        }
        for (key, run) in &mut self.guarded {
            if run.held != Held::Running {
                continue;
            }
            match self.actuator.freeze(&run.target, run.leader) {
                Ok(means) => {
                    reports.push(Report::Frozen {
                        key: key.clone(),
                        means: means.to_string(),
                    });
                    run.held = Held::Frozen(means);
                }
                Err(error) => {
                    reports.push(Report::Failed {
                        key: Some(key.clone()),
                        error: format!("not frozen: {error}"),
                    });
                    run.held = Held::Failed;
                }
            }
        }
    }

    /// How long to wait for orders before the clock must be read again; `None`: until the
    /// next order (no deadline, or it passed and everything due is frozen).
    pub(crate) fn wait(&self, now: u64) -> Option<Duration> {
        let deadline = self.deadline?;
        let left = deadline.checked_sub(now).filter(|left| *left > 0)?;
        Some(Duration::from_millis(left).min(LOOK_EVERY))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::keeper::FenceDeadline;

    /// Records what would have been frozen and thawed; pgid 13 cannot be frozen.
    #[derive(Default)]
    struct Recorder {
        calls: RefCell<Vec<String>>,
    }

    impl Actuator for &Recorder {
        fn identify(&self, target: &FenceTarget) -> Option<u64> {
            target.pgid.map(|p| p as u64 * 100)
        }

        fn freeze(&self, target: &FenceTarget, leader: Option<u64>) -> Result<Means, String> {
            if let Some(dir) = &target.cgroup {
                self.calls
                    .borrow_mut()
                    .push(format!("freeze {}", dir.display()));
                return Ok(Means::CgroupV2(dir.clone()));
            }
            let pgid = target.pgid.unwrap();
            if pgid == 13 {
                return Err("EPERM".to_owned());
            }
            self.calls.borrow_mut().push(format!("stop {pgid}"));
            Ok(Means::Group(pgid, leader))
        }

        fn thaw(&self, means: &Means) -> Result<(), String> {
            self.calls.borrow_mut().push(format!("thaw {means}"));
            Ok(())
        }
    }

    impl Recorder {
        fn take(&self) -> Vec<String> {
            let mut calls = std::mem::take(&mut *self.calls.borrow_mut());
            calls.sort();
            calls
        }
    }

    fn group(pgid: i32) -> FenceTarget {
        FenceTarget {
            pgid: Some(pgid),
            cgroup: None,
        }
    }

    fn guard(key: &str, target: FenceTarget) -> Order {
        Order::Guard {
            key: key.to_owned(),
            target,
        }
    }

    fn arm(until: u64) -> Order {
        Order::Arm {
            until: FenceDeadline::from_boottime_millis(until),
        }
    }

    fn key(key: &str) -> String {
        key.to_owned()
    }

    #[test]
    fn nothing_freezes_before_the_deadline_and_everything_at_it() {
        let recorder = Recorder::default();
        let mut keeper = Keeper::new(&recorder);
        let mut reports = Vec::new();
        keeper.order(guard("a", group(10)), 0, &mut reports);
        let both = FenceTarget {
            pgid: Some(11),
            cgroup: Some("/cg/b".into()),
        };
        keeper.order(guard("b", both), 0, &mut reports);
        assert_eq!(keeper.wait(0), None, "no deadline: wait for orders");
        keeper.order(arm(1000), 0, &mut reports);
        assert_eq!(keeper.wait(0), Some(LOOK_EVERY));
        assert_eq!(keeper.wait(950), Some(Duration::from_millis(50)));
        keeper.tick(999, &mut reports);
        assert!(reports.is_empty() && recorder.take().is_empty());
        // A later arm before the deadline moves it.
        keeper.order(arm(2000), 999, &mut reports);
        keeper.tick(1500, &mut reports);
        assert!(reports.is_empty() && recorder.take().is_empty());
        keeper.tick(2000, &mut reports);
        assert_eq!(recorder.take(), ["freeze /cg/b", "stop 10"]);
        assert_eq!(reports.len(), 2);
        assert!(reports.contains(&Report::Frozen {
            key: key("b"),
            means: "cgroup /cg/b".to_owned()
        }));
        assert_eq!(keeper.wait(2000), None, "all frozen: wait for orders");
        reports.clear();
        keeper.tick(5000, &mut reports);
        assert!(reports.is_empty(), "frozen once: {reports:?}");
        assert!(recorder.take().is_empty());
    }

    #[test]
    fn a_run_guarded_after_the_deadline_freezes_at_once() {
        let recorder = Recorder::default();
        let mut keeper = Keeper::new(&recorder);
        let mut reports = Vec::new();
        keeper.order(arm(100), 0, &mut reports);
        keeper.order(guard("late", group(20)), 150, &mut reports);
        assert_eq!(recorder.take(), ["stop 20"]);
        assert!(matches!(&reports[..], [Report::Frozen { key, .. }] if key == "late"));
    }

    #[test]
    fn thaw_needs_a_later_deadline_and_a_new_arm_thaws_nothing() {
        let recorder = Recorder::default();
        let mut keeper = Keeper::new(&recorder);
        let mut reports = Vec::new();
        keeper.order(guard("a", group(10)), 0, &mut reports);
        keeper.order(guard("b", group(11)), 0, &mut reports);
        keeper.order(arm(100), 0, &mut reports);
        keeper.tick(100, &mut reports);
        recorder.take();
        reports.clear();
        keeper.order(Order::Thaw { key: key("a") }, 150, &mut reports);
        assert!(matches!(&reports[..], [Report::Failed { error, .. }] if error.contains("arm")));
        assert!(recorder.take().is_empty());
        reports.clear();
        keeper.order(arm(10_000), 200, &mut reports);
        assert!(
            reports.is_empty() && recorder.take().is_empty(),
            "arm thaws nothing"
        );
        keeper.order(Order::Thaw { key: key("a") }, 200, &mut reports);
        assert_eq!(reports, [Report::Thawed { key: key("a") }]);
        assert_eq!(recorder.take(), ["thaw process group 10"]);
        // The thawed run is guarded again: the next deadline freezes it again (b stays frozen).
        reports.clear();
        keeper.tick(10_000, &mut reports);
        assert_eq!(recorder.take(), ["stop 10"]);
        keeper.order(Order::Disarm, 10_001, &mut reports);
        reports.clear();
        keeper.order(Order::Thaw { key: key("b") }, 10_002, &mut reports);
        assert_eq!(reports, [Report::Thawed { key: key("b") }]);
    }

    #[test]
    fn release_forgets_without_thawing_and_failures_are_reported_once() {
        let recorder = Recorder::default();
        let mut keeper = Keeper::new(&recorder);
        let mut reports = Vec::new();
        keeper.order(guard("a", group(10)), 0, &mut reports);
        keeper.order(guard("bad", group(13)), 0, &mut reports);
        keeper.order(arm(100), 0, &mut reports);
        keeper.tick(100, &mut reports);
        assert!(
            reports
                .iter()
                .any(|r| matches!(r, Report::Failed { key: Some(k), .. } if k == "bad"))
        );
        reports.clear();
        keeper.tick(200, &mut reports);
        assert!(reports.is_empty(), "{reports:?}");
        recorder.take();
        keeper.order(Order::Release { key: key("a") }, 300, &mut reports);
        assert!(recorder.take().is_empty(), "release does not thaw");
        keeper.order(arm(1000), 300, &mut reports);
        keeper.order(Order::Thaw { key: key("a") }, 300, &mut reports);
        assert!(
            matches!(&reports[..], [Report::Failed { error, .. }] if error.contains("not guarded"))
        );
    }

    #[test]
    fn a_known_key_with_a_new_target_is_guarded_anew() {
        let recorder = Recorder::default();
        let mut keeper = Keeper::new(&recorder);
        let mut reports = Vec::new();
        keeper.order(guard("a", group(10)), 0, &mut reports);
        keeper.order(arm(100), 0, &mut reports);
        keeper.tick(100, &mut reports);
        // The same target again changes nothing: still frozen, not frozen twice.
        keeper.order(guard("a", group(10)), 150, &mut reports);
        assert_eq!(recorder.take(), ["stop 10"]);
        keeper.order(guard("a", group(12)), 160, &mut reports);
        assert_eq!(recorder.take(), ["stop 12"]);
    }
}
