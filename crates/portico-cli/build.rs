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

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=order.txt");
    println!("cargo:rerun-if-env-changed=PORTICO_ORDER_FILE");
    let order = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("order.txt");
    let off = env::var("PORTICO_ORDER_FILE").is_ok_and(|v| v == "0");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if off || !linux || !order.is_file() {
        return;
    }
    let args = [format!("-Wl,--symbol-ordering-file={}", order.display()), "-Wl,--no-warn-symbol-ordering".to_owned()];
    if links_with(&args) {
        for arg in args {
            println!("cargo:rustc-link-arg-bin=portico={arg}");
        }
    }
}

/// Whether a program links with `args` passed to the linker, as this build would link.
fn links_with(args: &[String]) -> bool {
    let (Some(rustc), Some(out)) = (env::var_os("RUSTC"), env::var_os("OUT_DIR").map(PathBuf::from)) else {
        return false;
    };
    let src = out.join("order_probe.rs");
    if std::fs::write(&src, "fn main() {}\n").is_err() {
        return false;
    }
    let mut rustc = Command::new(rustc);
    rustc.arg("--crate-name=order_probe").arg("--edition=2021").arg("-o").arg(out.join("order_probe"));
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
    rustc.arg(&src).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}
