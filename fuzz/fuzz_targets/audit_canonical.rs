#![no_main]
//! Fuzz target `audit_canonical`: the checks of `portico_fuzz_checks::audit`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::audit::check);
