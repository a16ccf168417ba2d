//! Compile-time errors of the macros, one file per mistake, each pinned in its `.stderr`
//! (regenerate with `TRYBUILD=overwrite cargo test -p portico-macros --test ui`), and expansions
//! that must compile without a warning under strict lints.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui-pass/*.rs");
}
