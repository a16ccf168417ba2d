//! Nothing here: the micro-benchmarks are in `benches/micro.rs`.
