//! [`Explanation`]: a decision, and why each rule above the one that made it did not match.

use std::fmt;

use serde::Serialize;

use super::Decision;

/// A rule that did not match, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Miss {
    /// Its place in `[[policy.rules]]`, from 0.
    pub index: usize,
    /// Its name, if it has one.
    pub name: Option<String>,
    /// Each condition that failed, in words.
    pub why: Vec<String>,
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "policy.rules[{}] `{name}`: ", self.index)?,
            None => write!(f, "policy.rules[{}]: ", self.index)?,
        }
        f.write_str(&self.why.join("; "))
    }
}

/// What [`Policy::explain`](super::Policy::explain) says.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// The request, in words.
    pub request: String,
    /// The decision, as [`Policy::decide`](super::Policy::decide) makes it.
    pub decision: Decision,
    /// Every rule above the one that decided (every rule, when a default did), in order.
    pub misses: Vec<Miss>,
}

impl fmt::Display for Explanation {
    /// For a person:
    ///
    /// ```text
    /// tools/call of tool `write_file` (exposed as `fs__write_file`) of server `fs`, by `local`
    /// decision: ask by the default policy.defaults.tools (no rule matched)
    /// rules that did not match:
    ///   policy.rules[0] `reads`: tool `write_file` (exposed as `fs__write_file`) does not match `*read*`
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.request)?;
        writeln!(f, "decision: {}", self.decision)?;
        if self.misses.is_empty() {
            return Ok(());
        }
        let above = match self.decision.source {
            super::Source::Rule { .. } => "rules above it that did not match:",
            super::Source::Default { .. } => "rules that did not match:",
        };
        writeln!(f, "{above}")?;
        for miss in &self.misses {
            writeln!(f, "  {miss}")?;
        }
        Ok(())
    }
}
