//! Lays out the code that `portico` runs while it starts, idles and serves calls in one place
//! (`order.txt`, made by `scripts/order-file.sh`). The kernel maps code in 64 KiB blocks around
//! each page used, so spread-out functions keep most of the executable resident: with the order
//! file an idle gateway holds about 3 MB of its code instead of about 11.
//!
//! The option is LLD's (Rust's default linker for `x86_64-unknown-linux-gnu` since 1.90; mold has
//! it too), so a trivial program is linked with it first, by the same rustc, target, linker and
//! flags: a linker that does not take it (GNU ld, a distribution's toolchain) gets no order file
//! and the build goes on. `PORTICO_ORDER_FILE=0` turns it off. Names the build does not have
//! (another profile's, or stale ones) are skipped.
//!
//! The relocations of a position-independent executable are packed (`-z pack-relative-relocs`,
//! DT_RELR): the loader reads all of them at start-up, and packed they take about 10 KB instead
//! of about 520 KB of resident memory. It needs glibc 2.36 or later at run time, so a trivial
//! program is linked with it and run (a cross build does without). `PORTICO_PACK_RELOCS=0` turns
//! it off.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=order.txt");
    println!("cargo:rerun-if-env-changed=PORTICO_ORDER_FILE");
    println!("cargo:rerun-if-env-changed=PORTICO_PACK_RELOCS");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if !linux {
        return;
    }
    let order = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("order.txt");
    if order.is_file() && !off("PORTICO_ORDER_FILE") {
        let args =
            [format!("-Wl,--symbol-ordering-file={}", order.display()), "-Wl,--no-warn-symbol-ordering".to_owned()];
        use_if_it_links("order", &args, false);
    }
    if !off("PORTICO_PACK_RELOCS") {
        // A program that the loader cannot relocate does not get to `main`: run the probe.
        use_if_it_links("relr", &["-Wl,-z,pack-relative-relocs".to_owned()], true);
    }
}

fn off(var: &str) -> bool {
    env::var(var).is_ok_and(|v| v == "0")
}

/// Passes `args` to the linker of `portico` when a trivial program links with them (and, if
/// `run`, runs: only where the build's host is its target).
fn use_if_it_links(probe: &str, args: &[String], run: bool) {
    let Some(exe) = links_with(probe, args) else { return };
    // A cross build cannot run its probe, and so does without what needs one.
    let native = env::var("HOST").ok() == env::var("TARGET").ok();
    if run && !(native && Command::new(&exe).status().is_ok_and(|s| s.success())) {
        return;
    }
    for arg in args {
        println!("cargo:rustc-link-arg-bin=portico={arg}");
    }
}

/// The probe's executable, when a program links with `args` passed to the linker, as this
/// build would link.
fn links_with(probe: &str, args: &[String]) -> Option<PathBuf> {
    let (Some(rustc), Some(out)) = (env::var_os("RUSTC"), env::var_os("OUT_DIR").map(PathBuf::from)) else {
        return None;
    };
    let src = out.join(format!("{probe}_probe.rs"));
    std::fs::write(&src, "fn main() {}\n").ok()?;
    let exe = out.join(format!("{probe}_probe"));
    let mut rustc = Command::new(rustc);
    rustc.arg(format!("--crate-name={probe}_probe")).arg("--edition=2021").arg("-o").arg(&exe);
    if let Ok(target) = env::var("TARGET") {
        rustc.arg("--target").arg(target);
    }
    if let Ok(linker) = env::var("RUSTC_LINKER") {
        rustc.arg("-C").arg(format!("linker={linker}"));
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    rustc.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    for arg in args {
        rustc.arg("-C").arg(format!("link-arg={arg}"));
    }
    let linked = rustc.arg(&src).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    linked.then_some(exe)
}
