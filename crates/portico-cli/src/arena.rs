//! mimalloc's arenas, sized for a gateway that idles small.
//!
//! mimalloc reserves its first arena at 1 GiB of address space, and the arena's own bookkeeping
//! (bitmaps per size class, sized for the whole arena) sits at its start, written when the
//! allocator starts: about 190 KB resident in an idle gateway (measured in `docs/benchmarks.md`).
//! An arena of 64 MiB keeps about 40 KB of it. As the heap grows mimalloc reserves more arenas,
//! each eighth one twice the size of the ones before, so a busy gateway is not held to 64 MiB.
//!
//! Set before `main`, from the executable's constructors: Rust's runtime allocates before `main`,
//! and the first allocation reserves the first arena. `MIMALLOC_ARENA_RESERVE` in the
//! environment still wins.

/// The first arena's size, in KiB (mimalloc's unit for it).
#[cfg(all(feature = "mimalloc", target_os = "linux"))]
pub(crate) const ARENA_KIB: std::ffi::c_long = 64 * 1024;

#[cfg(all(feature = "mimalloc", target_os = "linux"))]
#[allow(unsafe_code)]
mod imp {
    /// `mi_option_arena_reserve` in the `mi_option_t` enum of the mimalloc (v3) that
    /// `libmimalloc-sys` builds; the test below fails if it names another option.
    const ARENA_RESERVE: std::ffi::c_int = 23;

    unsafe extern "C" {
        fn mi_option_set_default(option: std::ffi::c_int, value: std::ffi::c_long);
        #[cfg(test)]
        pub(super) fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    }

    extern "C" fn small_first_arena() {
        // SAFETY: sets one of mimalloc's options; it takes any option number and value, and
        // only an unset (not from the environment) option changes.
        unsafe { mi_option_set_default(ARENA_RESERVE, super::ARENA_KIB) }
    }

    /// Run by the loader with the executable's constructors, before Rust's runtime starts.
    #[used]
    #[unsafe(link_section = ".init_array")]
    static SMALL_FIRST_ARENA: extern "C" fn() = small_first_arena;

    #[cfg(test)]
    pub(super) fn arena_reserve() -> std::ffi::c_long {
        // SAFETY: reads one of mimalloc's options.
        unsafe { mi_option_get(ARENA_RESERVE) }
    }
}

#[cfg(all(test, feature = "mimalloc", target_os = "linux"))]
mod tests {
    #[test]
    fn the_first_arena_is_small() {
        if std::env::var_os("MIMALLOC_ARENA_RESERVE").is_some() {
            return; // the environment decides
        }
        assert_eq!(super::imp::arena_reserve(), super::ARENA_KIB);
        // The arena itself: an anonymous mapping of 64 MiB, and none of the default 1 GiB.
        let _warm: Vec<Box<[u8; 64]>> = (0..1000).map(|_| Box::new([0; 64])).collect();
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let sizes: Vec<u64> = maps
            .lines()
            .filter(|l| l.split_whitespace().count() == 5) // no path: anonymous
            .filter_map(|l| {
                let (a, b) = l.split_whitespace().next()?.split_once('-')?;
                Some(u64::from_str_radix(b, 16).ok()? - u64::from_str_radix(a, 16).ok()?)
            })
            .collect();
        assert!(sizes.contains(&(64 << 20)), "no 64 MiB arena among {sizes:?}");
        assert!(!sizes.iter().any(|&s| s >= 1 << 30), "an arena of 1 GiB or more: {sizes:?}");
    }
}
