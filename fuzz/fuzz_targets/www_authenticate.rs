#![no_main]
//! Fuzz target `www_authenticate`: the checks of `portico_fuzz_checks::www_authenticate`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::www_authenticate::check);
