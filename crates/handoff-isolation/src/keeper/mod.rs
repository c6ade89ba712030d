//! The keeper: a dead man's switch outside the server. A server that shares its tasks with
//! other instances holds a lease on each run; when it stops (SIGSTOP, a hung machine, a lost
//! database) another instance takes the task over once the lease expires — while this
//! server's agent processes, which are processes of their own, would go on working. The
//! keeper is a small process per server that freezes every run it guards once the deadline
//! the server last gave it has passed: it needs nothing from a stopped server to do that.
//!
//! Command line: `<launcher> keeper [<server pid>]`; orders come on stdin, one JSON line each
//! ([`Order`]), reports go to stdout ([`Report`]), and one log line per freeze, thaw or
//! refusal to stderr. Deadlines are on `CLOCK_BOOTTIME` ([`FenceDeadline`]), which runs on
//! while either process is stopped and while the machine is suspended.
//!
//! Nothing is durable: the guarded runs, how each was frozen and the deadline live in the
//! keeper's memory only. It ends when its stdin closes and dies with the server (parent-death
//! signal), leaving runs as they are: a frozen run of a dead server stays frozen until a
//! Handoff that recovers the task kills it (its agent dies with the server anyway).

mod freeze;
mod io;
mod protocol;
mod state;

use std::{ffi::OsString, sync::mpsc::RecvTimeoutError};

use nix::{
    sys::{prctl, signal::Signal},
    unistd::{Pid, getppid, setpgid},
};

pub use protocol::{
    FenceDeadline, FenceTarget, MAX_GUARDED, MAX_KEY_LEN, MAX_LINE, Order, Report, boottime_millis,
    check_key,
};

use crate::IsolationError;
use io::{Input, Output};

/// How long the last lines may take to be written once stdin closed (the server may not read).
const FLUSH_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);
use state::Keeper;

/// Runs the keeper with its command line (after `keeper`) until its stdin closes.
pub fn run(args: &[OsString]) -> Result<(), IsolationError> {
    let usage = || IsolationError::Spec("usage: keeper [<server pid>]".to_owned());
    let parent = match args {
        [] => None,
        [pid] => Some(
            pid.to_str()
                .and_then(|p| p.parse::<i32>().ok())
                .ok_or_else(usage)?,
        ),
        _ => return Err(usage()),
    };
    prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| confine("prctl", e))?;
    // The server may have died before the parent-death signal was set.
    if parent.is_some_and(|p| getppid().as_raw() != p) {
        return Err(IsolationError::Confine {
            mechanism: "prctl",
            message: "the server exited before the keeper started".to_owned(),
        });
    }
    // Out of the server's process group: a stop aimed at the server's group (a terminal's
    // Ctrl-Z) must not stop its keeper too. A session leader cannot move, and stays.
    let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let output = Output::start()?;
    let orders = io::read_orders(std::io::stdin())?;
    output.report(&Report::Ready {
        pid: std::process::id(),
    });
    serve(&mut Keeper::new(freeze::System), &orders, &output);
    output.finish(FLUSH_LIMIT);
    Ok(())
}

/// The deadline loop: carries out orders as they come, and freezes on time without them.
fn serve<A: freeze::Actuator>(
    keeper: &mut Keeper<A>,
    orders: &std::sync::mpsc::Receiver<Input>,
    output: &Output,
) {
    // Unreadable, the clock counts as late: runs freeze rather than run twice.
    let now = || boottime_millis().unwrap_or(u64::MAX);
    let mut reports = Vec::new();
    loop {
        keeper.tick(now(), &mut reports);
        for report in reports.drain(..) {
            output.report(&report);
        }
        let input = match keeper.wait(now()) {
            Some(wait) => match orders.recv_timeout(wait) {
                Ok(input) => input,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => Input::End,
            },
            None => orders.recv().unwrap_or(Input::End),
        };
        match input {
            Input::Line(line) => match Order::parse(&line) {
                Ok(order) => keeper.order(order, now(), &mut reports),
                Err(e) => output.log(format!("ignored a line that is no order: {e}")),
            },
            Input::TooLong => output.log(format!("ignored a line over {MAX_LINE} bytes")),
            Input::End => return,
        }
    }
}

fn confine(mechanism: &'static str, errno: nix::errno::Errno) -> IsolationError {
    IsolationError::Confine {
        mechanism,
        message: errno.to_string(),
    }
}
