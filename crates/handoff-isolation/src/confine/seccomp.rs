//! seccomp: with the network off, IPv4 and IPv6 sockets cannot even be created (UDP included,
//! which Landlock does not cover); Unix sockets still work.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::IsolationError;

const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;
const EACCES: u32 = 13;

/// `socket(2)` and `io_uring_setup(2)` numbers (io_uring can create sockets on its own).
fn syscalls(arch: TargetArch) -> Option<(i64, i64)> {
    match arch {
        TargetArch::x86_64 => Some((41, 425)),
        TargetArch::aarch64 => Some((198, 425)),
        _ => None,
    }
}

/// Makes IPv4/IPv6 `socket(2)` fail with EACCES for the calling process and its children.
pub fn deny_inet_sockets() -> Result<(), IsolationError> {
    let error = |e: String| IsolationError::Confine {
        mechanism: "seccomp",
        message: e,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| error(e.to_string()))?;
    let (socket, io_uring) =
        syscalls(arch).ok_or_else(|| error(format!("no syscall table for {arch:?}")))?;
    let family = |af| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, af)
            .and_then(|c| SeccompRule::new(vec![c]))
    };
    let rules = BTreeMap::from([
        (
            socket,
            vec![
                family(AF_INET).map_err(|e| error(e.to_string()))?,
                family(AF_INET6).map_err(|e| error(e.to_string()))?,
            ],
        ),
        // No conditions: every call matches.
        (io_uring, Vec::new()),
    ]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(EACCES),
        arch,
    )
    .map_err(|e| error(e.to_string()))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| error(e.to_string()))?;
    // Sets no_new_privs itself, which an unprivileged filter requires.
    seccompiler::apply_filter(&program).map_err(|e| error(e.to_string()))
}

/// Whether this kernel supports seccomp filters.
pub fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|status| status.lines().any(|l| l.starts_with("Seccomp:")))
}
