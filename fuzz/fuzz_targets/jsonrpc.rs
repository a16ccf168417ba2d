#![no_main]
//! Fuzz target `jsonrpc`: the checks of `portico_fuzz_checks::jsonrpc`, under the allocation bound.

portico_fuzz::target!(portico_fuzz_checks::jsonrpc::check);
