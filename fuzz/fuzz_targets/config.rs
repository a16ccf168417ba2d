#![no_main]
//! Fuzz target `config`: the checks of `portico_fuzz_checks::config`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::config::check);
