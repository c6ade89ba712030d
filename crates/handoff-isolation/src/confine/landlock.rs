//! Landlock: the calling process may then write only beneath the given paths (and, with the
//! network off, neither bind nor connect TCP). Applied by the launcher right before `exec`.

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, RulesetStatus, Scope, path_beneath_rules,
};

use crate::{IsolationError, NetworkMode};

/// The newest ABI this code asks for; older kernels get what they support (best effort).
const ABI_WANTED: ABI = ABI::V6;

/// Device files a shell writes to as a matter of course.
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Restricts the calling process; an error when the kernel enforces nothing at all.
pub fn restrict_filesystem(
    writable: &[PathBuf],
    network: NetworkMode,
) -> Result<RulesetStatus, IsolationError> {
    let status = ruleset(writable, network).map_err(|e| IsolationError::Confine {
        mechanism: "landlock",
        message: e.to_string(),
    })?;
    if status == RulesetStatus::NotEnforced {
        return Err(IsolationError::Confine {
            mechanism: "landlock",
            message: "the kernel enforces no Landlock rule".to_owned(),
        });
    }
    Ok(status)
}

fn ruleset(writable: &[PathBuf], network: NetworkMode) -> Result<RulesetStatus, RulesetError> {
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_WANTED))?
        // No signal to a process outside the sandbox (Handoff), even without a pid namespace.
        .scope(Scope::Signal)?;
    if network == NetworkMode::Off {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?
            // Abstract Unix sockets are network too: the host's would be reachable.
            .scope(Scope::AbstractUnixSocket)?;
    }
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_WANTED)))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(ABI_WANTED)))?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(ABI_WANTED)))?
        .restrict_self()?;
    Ok(status.ruleset)
}

/// Whether the kernel enforces Landlock: creating (not applying) a ruleset that must be
/// fully supported succeeds only then (securityfs, which lists the LSMs, is often unmounted).
pub fn landlock_available() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create())
        .is_ok()
}
