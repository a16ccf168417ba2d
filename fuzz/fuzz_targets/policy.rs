#![no_main]
//! Fuzz target `policy`: the checks of `portico_fuzz_checks::policy`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::policy::check);
