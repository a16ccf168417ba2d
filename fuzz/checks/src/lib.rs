//! The bodies of Portico's fuzz targets, shared by the libFuzzer targets in `fuzz/` and the
//! stable regression test in `tests/corpus.rs`, which replays every committed corpus file and
//! crash reproducer through them.
//!
//! Each `check` takes the fuzzer's bytes and panics when an invariant fails: besides not
//! crashing, decoded values must encode and decode again to what was decoded, and the policy
//! matcher must agree with the naive matcher in [`policy`]. The allocation bound
//! ([`alloc_bound`]) is enforced by the fuzz targets' counting allocator.
#![deny(missing_docs)]

use std::future::Future;

pub mod audit;
pub mod config;
pub mod jsonrpc;
pub mod jwt;
pub mod policy;
pub mod request_state;
pub mod schema;
pub mod sse;
pub mod stdio_framing;
pub mod uri_template;
pub mod www_authenticate;

/// A target's check: panics when an invariant fails for the input.
pub type Check = fn(&[u8]);

/// Every target: its name (the directory under `fuzz/corpus/`) and its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("audit_canonical", audit::check),
    ("config", config::check),
    ("jsonrpc", jsonrpc::check),
    ("jwt", jwt::check),
    ("policy", policy::check),
    ("request_state", request_state::check),
    ("schema", schema::check),
    ("sse", sse::check),
    ("stdio_framing", stdio_framing::check),
    ("uri_template", uri_template::check),
    ("www_authenticate", www_authenticate::check),
];

/// The most bytes one execution may hold allocated at once: 32 MiB, plus 256 bytes per input
/// byte. The fuzz targets' counting allocator fails the run past it.
pub fn alloc_bound(input_len: usize) -> usize {
    (32 << 20) + 256 * input_len
}

/// Runs `f` to completion on a current-thread runtime kept for the thread.
pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    thread_local! {
        static RT: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime builds");
    }
    RT.with(|rt| rt.block_on(f))
}

/// Reads structured values out of fuzzer bytes; past the end, every read gives zero.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl<'a> Bytes<'a> {
    pub(crate) fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    /// A number below `n` (n > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n
    }

    pub(crate) fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// A string of up to `max` characters from `alphabet`.
    pub(crate) fn string(&mut self, alphabet: &[char], max: usize) -> String {
        let n = self.below(max + 1);
        (0..n).map(|_| alphabet[self.below(alphabet.len())]).collect()
    }

    /// The rest of the bytes.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

/// Splits `data` at the first `0xff` byte (the separator the structured targets use).
pub(crate) fn split2(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == 0xff) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
