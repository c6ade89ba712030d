//! Lays out the release binary's start-up and request-path functions together.
//!
//! The kernel maps up to 64 KB of a binary around every code page a process faults in, so
//! start-up code scattered over a 20–28 MB `.text` made most of it resident before the first
//! request (docs/benchmarks/2026-11-28-issue-26-start-up-code-together.md). `startup.order`
//! lists the functions `handoff serve` runs at start-up and for the common requests
//! (`scripts/startup-order/generate.sh` traces them); lld places them first, in a few
//! contiguous pages. A name the build no longer has is skipped, so a stale file costs memory,
//! never correctness.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=startup.order");
    println!("cargo::rerun-if-env-changed=HANDOFF_STARTUP_ORDER");
    if !links_with_lld_release() {
        return;
    }
    let Ok(dir) = env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = Path::new(&dir).join("startup.order");
    if order.is_file() {
        println!(
            "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// A release build for the one target whose default linker is rust-lld (Rust ≥ 1.90), with
/// no linker chosen in RUSTFLAGS: GNU ld would reject the option. `HANDOFF_STARTUP_ORDER=0`
/// turns the layout off (to measure without it).
fn links_with_lld_release() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    var("PROFILE") == "release"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("HANDOFF_STARTUP_ORDER") != "0"
        && !flags.contains("linker")
        && !flags.contains("fuse-ld")
}
