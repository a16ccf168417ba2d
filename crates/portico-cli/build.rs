//! Lays out the code that `portico` runs while it starts, idles and serves calls in one place
//! (`order.txt`, made by `scripts/order-file.sh`). The kernel maps code in 64 KiB blocks around
//! each page used, so spread-out functions keep most of the executable resident: with the order
//! file an idle gateway holds about 3 MB of its code instead of about 11.
//!
//! Only with Rust's own LLD, the default linker for `x86_64-unknown-linux-gnu` since Rust 1.90
//! (the workspace needs 1.95); another linker may not know the option. `PORTICO_ORDER_FILE=0`
//! turns it off. Names the build does not have (another profile's, or stale ones) are skipped.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=order.txt");
    println!("cargo:rerun-if-env-changed=PORTICO_ORDER_FILE");
    let order = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("order.txt");
    let off = env::var("PORTICO_ORDER_FILE").is_ok_and(|v| v == "0");
    let target = env::var("TARGET").unwrap_or_default();
    // A linker chosen by hand (`target.*.linker`, `-C linker`, `-C linker-features`,
    // `-C link-self-contained`, `-fuse-ld`) may not be LLD.
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let other_linker = env::var_os("RUSTC_LINKER").is_some() || flags.contains("link") || flags.contains("fuse-ld");
    if off || target != "x86_64-unknown-linux-gnu" || other_linker || !order.is_file() {
        return;
    }
    println!("cargo:rustc-link-arg-bin=portico=-Wl,--symbol-ordering-file={}", order.display());
    println!("cargo:rustc-link-arg-bin=portico=-Wl,--no-warn-symbol-ordering");
}
