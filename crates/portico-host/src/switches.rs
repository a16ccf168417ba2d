//! [`Switches`]: the tools a person switched off, for every client at once.
//!
//! A tool switched off is left out of `tools/list` (clients get `list_changed`) and its calls
//! are refused with a tool error that says so. Switches live in memory: a restart of the host
//! switches every tool on again.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

/// The exposed names of the tools switched off.
#[derive(Debug, Default)]
pub struct Switches {
    off: Mutex<BTreeSet<String>>,
}

impl Switches {
    /// Whether the exposed tool `name` is on (every tool is, until switched off).
    pub fn is_on(&self, name: &str) -> bool {
        !self.off.lock().unwrap_or_else(PoisonError::into_inner).contains(name)
    }

    /// Switches `name` on or off; whether that changed anything.
    pub fn set(&self, name: &str, on: bool) -> bool {
        let mut off = self.off.lock().unwrap_or_else(PoisonError::into_inner);
        if on { off.remove(name) } else { off.insert(name.to_owned()) }
    }

    /// The tools switched off, by exposed name.
    pub fn off(&self) -> Vec<String> {
        self.off.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_changes_once() {
        let s = Switches::default();
        assert!(s.is_on("a__b"));
        assert!(s.set("a__b", false));
        assert!(!s.set("a__b", false));
        assert!(!s.is_on("a__b"));
        assert_eq!(s.off(), vec!["a__b".to_owned()]);
        assert!(s.set("a__b", true));
        assert!(s.is_on("a__b"));
    }
}
