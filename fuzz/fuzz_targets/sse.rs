#![no_main]
//! Fuzz target `sse`: the checks of `portico_fuzz_checks::sse`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::sse::check);
