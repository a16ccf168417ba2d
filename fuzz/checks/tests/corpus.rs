//! Every committed corpus file and crash reproducer (`fuzz/corpus/TARGET/`,
//! `fuzz/regressions/TARGET/`) run through its target's checks on stable Rust: the fuzzers'
//! findings stay fixed even where no nightly toolchain is installed.

use std::path::Path;
use std::time::{Duration, Instant};

use portico_fuzz_checks::TARGETS;

fn run_dir(dir: &Path, check: fn(&[u8])) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut n = 0;
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        eprintln!("{}", path.display());
        check(&data);
        n += 1;
    }
    n
}

#[test]
fn every_corpus_file_and_reproducer_passes_its_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut total = 0;
    for (name, check) in TARGETS {
        let corpus = run_dir(&root.join("corpus").join(name), *check);
        assert!(corpus > 0, "fuzz/corpus/{name} is empty or missing");
        total += corpus + run_dir(&root.join("regressions").join(name), *check);
    }
    eprintln!("{total} inputs checked");
}

#[test]
fn every_target_has_a_corpus_and_a_fuzz_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (name, _) in TARGETS {
        assert!(root.join("fuzz_targets").join(format!("{name}.rs")).is_file(), "fuzz/fuzz_targets/{name}.rs");
    }
}

/// Policy regexes run on the `regex` crate's finite automata: a pattern that backtracking
/// engines take exponential time on is matched in linear time here.
#[test]
fn policy_regexes_take_linear_time() {
    let start = Instant::now();
    let raw: portico_host::policy::raw::RawPolicy = serde_json::from_value(serde_json::json!({
        "rules": [{ "args": [{ "pointer": "/s", "regex": "^(a|aa)*(a*)*b$" }], "decision": "deny" }]
    }))
    .expect("parses");
    let policy = portico_host::policy::Policy::compile(&raw).expect("compiles");
    let args = serde_json::json!({ "s": "a".repeat(200_000) });
    let req = portico_host::policy::Request::tool("fs", "read").arguments(&args);
    let d = policy.decide(&req);
    assert_ne!(d.action, portico_host::policy::Action::Deny);
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
}
