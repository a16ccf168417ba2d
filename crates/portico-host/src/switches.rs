//! [`Switches`]: the tools a person switched off, for every client or for one client session.
//!
//! A tool switched off for everyone is left out of `tools/list` (clients get `list_changed`)
//! and its calls are refused with a tool error that says so. Switched off for one downstream
//! session ([`ConnectionId`](portico::server::ConnectionId)), the same holds for that session
//! only. The switches for everyone are kept in `state_dir/tools-off.json`
//! ([`SWITCHES_FILE`]), so a tool a person switched off stays off after a restart; a session's
//! switches end with the session.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The file in the state directory that keeps the tools switched off for everyone: a JSON
/// array of exposed names.
pub const SWITCHES_FILE: &str = "tools-off.json";

#[derive(Debug, Default)]
struct Off {
    everyone: BTreeSet<String>,
    sessions: BTreeMap<u64, BTreeSet<String>>,
}

/// The exposed names of the tools switched off.
#[derive(Debug, Default)]
pub struct Switches {
    off: Mutex<Off>,
    /// Where the switches for everyone are kept; none: in memory only.
    file: Option<PathBuf>,
}

impl Switches {
    /// Switches kept in `state_dir` ([`SWITCHES_FILE`]), starting with the ones stored there. A
    /// file that cannot be read is reported (the tools it named are on until someone switches
    /// them off again, which writes the file anew); a missing one means none is off.
    pub fn stored_in(state_dir: &Path) -> Switches {
        let file = state_dir.join(SWITCHES_FILE);
        let everyone = match std::fs::read(&file) {
            Ok(bytes) => match serde_json::from_slice::<BTreeSet<String>>(&bytes) {
                Ok(names) => names,
                Err(e) => {
                    tracing::error!(target: "portico::host", file = %file.display(), "the tools switched off cannot be read: {e}");
                    BTreeSet::new()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => {
                tracing::error!(target: "portico::host", file = %file.display(), "the tools switched off cannot be read: {e}");
                BTreeSet::new()
            }
        };
        Switches { off: Mutex::new(Off { everyone, sessions: BTreeMap::new() }), file: Some(file) }
    }

    /// Writes the switches for everyone to the file, whole, through a file beside it.
    fn store(&self, everyone: &BTreeSet<String>) {
        let Some(file) = &self.file else { return };
        let write = || -> std::io::Result<()> {
            if let Some(dir) = file.parent() {
                std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
            }
            let tmp = file.with_extension("json.tmp");
            let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
            f.write_all(&serde_json::to_vec(everyone).map_err(std::io::Error::other)?)?;
            f.sync_all()?;
            std::fs::rename(&tmp, file)
        };
        if let Err(e) = write() {
            tracing::error!(
                target: "portico::host",
                file = %file.display(),
                "the tools switched off are in effect but could not be saved; they end with this process: {e}"
            );
        }
    }

    fn off_set(&self) -> MutexGuard<'_, Off> {
        self.off.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the exposed tool `name` is on for everyone (every tool is, until switched off).
    pub fn is_on(&self, name: &str) -> bool {
        !self.off_set().everyone.contains(name)
    }

    /// Whether `name` is on for the downstream session `session` (on for everyone, and not
    /// switched off for it).
    pub fn is_on_for(&self, name: &str, session: Option<u64>) -> bool {
        let off = self.off_set();
        !off.everyone.contains(name) && session.is_none_or(|s| off.sessions.get(&s).is_none_or(|t| !t.contains(name)))
    }

    /// Switches `name` on or off for everyone; whether that changed anything.
    pub fn set(&self, name: &str, on: bool) -> bool {
        let mut off = self.off_set();
        let changed = if on { off.everyone.remove(name) } else { off.everyone.insert(name.to_owned()) };
        if changed {
            self.store(&off.everyone);
        }
        changed
    }

    /// Switches `name` on or off for the session `session` only; whether that changed anything.
    pub fn set_for(&self, session: u64, name: &str, on: bool) -> bool {
        let mut off = self.off_set();
        if on {
            let Some(set) = off.sessions.get_mut(&session) else { return false };
            let changed = set.remove(name);
            if set.is_empty() {
                off.sessions.remove(&session);
            }
            changed
        } else {
            off.sessions.entry(session).or_default().insert(name.to_owned())
        }
    }

    /// The tools switched off for everyone, by exposed name.
    pub fn off(&self) -> Vec<String> {
        self.off_set().everyone.iter().cloned().collect()
    }

    /// The tools switched off for `session` alone.
    pub fn off_for(&self, session: u64) -> BTreeSet<String> {
        self.off_set().sessions.get(&session).cloned().unwrap_or_default()
    }

    /// The sessions `name` is switched off for.
    pub fn sessions_off(&self, name: &str) -> Vec<u64> {
        self.off_set().sessions.iter().filter(|(_, t)| t.contains(name)).map(|(s, _)| *s).collect()
    }

    /// Forgets the switches of a session that ended.
    pub fn forget(&self, session: u64) {
        self.off_set().sessions.remove(&session);
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
        assert!(!s.is_on_for("a__b", Some(1)));
        assert_eq!(s.off(), vec!["a__b".to_owned()]);
        assert!(s.set("a__b", true));
        assert!(s.is_on("a__b"));
    }

    #[test]
    fn a_switch_for_one_session_leaves_the_others_alone() {
        let s = Switches::default();
        assert!(s.set_for(7, "a__b", false));
        assert!(!s.set_for(7, "a__b", false));
        assert!(!s.is_on_for("a__b", Some(7)));
        assert!(s.is_on_for("a__b", Some(8)) && s.is_on_for("a__b", None) && s.is_on("a__b"));
        assert_eq!(s.sessions_off("a__b"), vec![7]);
        assert!(s.set_for(7, "a__b", true));
        assert!(s.is_on_for("a__b", Some(7)));
        assert!(!s.set_for(7, "a__b", true));
        s.set_for(9, "x", false);
        s.forget(9);
        assert!(s.off_for(9).is_empty());
    }
}
