#![no_main]
//! Fuzz target `jwt`: the checks of `portico_fuzz_checks::jwt`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::jwt::check);
