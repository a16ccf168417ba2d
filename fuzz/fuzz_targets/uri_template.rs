#![no_main]
//! Fuzz target `uri_template`: the checks of `portico_fuzz_checks::uri_template`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::uri_template::check);
