//! `pow` for the whole process, from the `libm` crate instead of the C library's libm.
//!
//! Tokio's multi-threaded scheduler updates a moving average with `f64::powf` every time a
//! worker finishes a batch of tasks, so even an idle gateway calls `pow` at each ping. glibc's
//! `pow` and the tables it reads lie in several 64 KiB blocks of `libm.so.6`, and the kernel maps
//! each block whole on a fault: an idle gateway held about 0.4 MB of libm's pages for this one
//! function (measured in `docs/benchmarks.md`). Defined here, the executable's own `pow` is the
//! one every call in the program links to; it is the `libm` crate's port of musl's, accurate to
//! within an ulp like glibc's, and a few kilobytes of code laid out with the rest (`order.txt`).
//!
//! Linux with glibc only: elsewhere the C library's `pow` stays.

/// `x` raised to the power `y` (C's `pow`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    #[cfg(test)]
    tests::CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    libm::pow(x, y)
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Calls of the `pow` above (test builds only).
    pub(super) static CALLS: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn powf_in_this_program_is_this_pow() {
        // `f64::powf` compiles to a call to `pow`, which links to the definition above.
        let (x, y) = (std::hint::black_box(0.8_f64), std::hint::black_box(7.0_f64));
        let before = CALLS.load(Ordering::Relaxed);
        let z = x.powf(y);
        assert!(CALLS.load(Ordering::Relaxed) > before, "powf did not call this pow");
        assert_eq!(z.to_bits(), super::pow(x, y).to_bits());
        assert!((x.powf(y) - 0.209_715_2).abs() < 1e-12);
        assert_eq!(super::pow(2.0, 10.0), 1024.0);
        assert!(super::pow(-1.0, 0.5).is_nan());
        assert_eq!(super::pow(0.0, -1.0), f64::INFINITY);
    }
}
