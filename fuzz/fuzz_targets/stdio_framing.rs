#![no_main]
//! Fuzz target `stdio_framing`: the checks of `portico_fuzz_checks::stdio_framing`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::stdio_framing::check);
