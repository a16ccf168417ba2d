#![no_main]
//! Fuzz target `request_state`: the checks of `portico_fuzz_checks::request_state`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::request_state::check);
