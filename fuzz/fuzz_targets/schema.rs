#![no_main]
//! Fuzz target `schema`: the checks of `portico_fuzz_checks::schema`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::schema::check);
