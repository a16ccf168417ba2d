//! Exposed names: `<prefix><separator><name>`, always legal, deterministic, collision-checked.
//!
//! Clients enforce `^[a-zA-Z0-9_-]{1,64}$` on tool names (some reject a list with one name
//! outside it), so every exposed name matches it. The rule for a name that does not:
//!
//! 1. every character outside `a-z A-Z 0-9 _ -` becomes `_`;
//! 2. if a character was replaced, or the result is longer than 64 characters, it is cut to
//!    55 characters and `_` plus the first 8 hex digits of the SHA-256 of the *unchanged* full
//!    name is appended (64 in all).
//!
//! Two different names that differ only in replaced characters (`a.b`, `a:b`) so get different
//! hashes, and a name that was legal to begin with is never changed. A clash that remains (a
//! legal name equal to another's rewritten one) is reported by the registry, naming both.

use sha2::{Digest, Sha256};

/// The longest name clients accept.
pub const MAX_NAME_LEN: usize = 64;

/// Whether `name` already matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_legal(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `prefix + separator + name` (or `name` alone when `prefix` is empty), made legal by the
/// rule in the module docs.
pub fn exposed_name(prefix: &str, separator: &str, name: &str) -> String {
    let full = if prefix.is_empty() { name.to_owned() } else { format!("{prefix}{separator}{name}") };
    legalize(&full)
}

/// Makes `full` legal by the rule in the module docs; a legal name comes back unchanged.
pub fn legalize(full: &str) -> String {
    if is_legal(full) {
        return full.to_owned();
    }
    let mut out: String =
        full.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if out.is_empty() {
        out.push('_');
    }
    out.truncate(55);
    let digest = Sha256::digest(full.as_bytes());
    out.push('_');
    for byte in &digest[..4] {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_names_are_kept_and_prefixed() {
        assert_eq!(exposed_name("files", "__", "read_file"), "files__read_file");
        assert_eq!(exposed_name("", "__", "read_file"), "read_file");
        assert!(is_legal(&exposed_name("gh", "__", "create-issue")));
    }

    #[test]
    fn illegal_names_become_legal_deterministically_and_distinctly() {
        let dot = exposed_name("db", "__", "query.run");
        let colon = exposed_name("db", "__", "query:run");
        assert!(is_legal(&dot) && is_legal(&colon), "{dot} {colon}");
        assert!(dot.starts_with("db__query_run_"));
        assert_ne!(dot, colon);
        assert_eq!(dot, exposed_name("db", "__", "query.run"));
        let long = exposed_name("server", "__", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(is_legal(&long));
        assert_ne!(long, exposed_name("server", "__", &"x".repeat(101)));
        let unicode = exposed_name("s", "__", "héllo wörld");
        assert!(is_legal(&unicode), "{unicode}");
        assert!(is_legal(&legalize("")));
    }
}
