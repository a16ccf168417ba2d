//! "Always allow" answers, kept in the state directory.
//!
//! When a person answers an `ask` with "always allow", an [`AlwaysRule`] is stored: an allow
//! for one server's tool (or prompt, or resource), optionally for one principal only. It
//! answers later `ask`s for the same thing and nothing else; see the [module docs](super) for
//! why a configured `deny` still wins.
//!
//! An answer for a tool is bound to the tool's definition as the person saw it: its
//! [`definition_digest`] (SHA-256 over the canonical JSON of the tool as its server lists
//! it: title, description, schemas, annotations, everything but the exposed name). When the
//! server changes the tool (a "rug pull": new description, new annotations, new schema), the
//! stored answer no longer matches and the person is asked again. Answers stored by older
//! builds, and answers for prompts, resources and upstream requests, carry no digest and
//! match by name alone.
//!
//! The file is `policy-always.json` in the state directory, mode 0600, replaced atomically
//! (written to a temporary file, synced, renamed) under a lock file, so that the gateway and
//! `portico policy revoke` can change it at the same time without losing either change.
//! Readers see a change at their next decision: [`AlwaysStore::rules`] re-reads the file when
//! it was replaced. The calls do blocking file I/O; they are short, but an async caller with
//! many of them may want `spawn_blocking`.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use portico::schema::Tool;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::{Method, Request};

/// The file's name in the state directory.
pub const FILE_NAME: &str = "policy-always.json";

/// The version of the file's format this build writes and reads.
const VERSION: u32 = 1;

/// One stored "always allow".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AlwaysRule {
    /// Its id, given by [`AlwaysStore::add`] (what `portico policy revoke` takes).
    #[serde(default)]
    pub id: String,
    /// The method it allows (`tools/call` unless said otherwise).
    pub method: Method,
    /// The server's name in the config.
    pub server: String,
    /// The tool's (or prompt's) name at the upstream, or the resource's URI: renaming or
    /// re-prefixing the server does not change what it allows.
    pub tool: String,
    /// The name the person saw, for showing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed: Option<String>,
    /// Only for this principal; for every principal when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// When it was stored, in seconds since the Unix epoch (set by [`AlwaysStore::add`]).
    #[serde(default)]
    pub created_at: u64,
    /// Who answered, and through which channel, for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The [`definition_digest`] of the tool the person allowed; a tool whose definition
    /// changed since is asked about again. Not set: matches by name alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
}

/// `sha256:<hex>` of the canonical JSON of `tool` without its `name` (which the gateway may
/// rename): what an "always allow" for it is bound to.
pub fn definition_digest(tool: &Tool) -> String {
    let mut value = serde_json::to_value(tool).unwrap_or(serde_json::Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("name");
    }
    let hash = Sha256::digest(crate::audit::record::canonical_json(&value).as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

impl AlwaysRule {
    /// An "always allow" for calls of `tool` (its upstream name) of `server`, by anyone.
    pub fn new(server: impl Into<String>, tool: impl Into<String>) -> Self {
        AlwaysRule {
            id: String::new(),
            method: Method::CallTool,
            server: server.into(),
            tool: tool.into(),
            exposed: None,
            principal: None,
            created_at: 0,
            note: None,
            definition: None,
        }
    }

    /// For this method instead of `tools/call` (`tool` is then the prompt or the URI).
    #[must_use]
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// Only for `principal`.
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// With the name the person saw.
    #[must_use]
    pub fn exposed(mut self, exposed: impl Into<String>) -> Self {
        self.exposed = Some(exposed.into());
        self
    }

    /// With a note for the record.
    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// Bound to this tool's definition (see [`definition_digest`]).
    #[must_use]
    pub fn definition(mut self, tool: &Tool) -> Self {
        self.definition = Some(definition_digest(tool));
        self
    }

    /// Whether it answers `req`: same method, server and upstream name, the principal it
    /// names, if any, and the tool's definition it is bound to, if any (a request that does
    /// not carry the tool's definition does not match a bound rule). Exact comparisons, no
    /// globs.
    pub fn matches(&self, req: &Request<'_>) -> bool {
        self.method == req.method
            && self.server == req.server
            && self.tool == req.name
            && self.principal.as_deref().is_none_or(|p| p == req.principal)
            && self.definition.as_deref().is_none_or(|d| req.tool.is_some_and(|t| definition_digest(t) == d))
    }

    fn same_target(&self, other: &AlwaysRule) -> bool {
        self.method == other.method
            && self.server == other.server
            && self.tool == other.tool
            && self.principal == other.principal
    }
}

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading, writing or locking failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a store this build can read.
    #[error("{}: not a store of \"always allow\" rules: {message}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

#[derive(Debug, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    #[serde(default)]
    rules: Vec<AlwaysRule>,
}

/// What identifies one version of the file: replaced files differ in inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

#[derive(Debug)]
struct Cache {
    stamp: Option<Stamp>,
    rules: Arc<[AlwaysRule]>,
}

/// The stored "always allow" rules of one state directory.
#[derive(Debug)]
pub struct AlwaysStore {
    path: PathBuf,
    lock_path: PathBuf,
    cache: Mutex<Option<Cache>>,
}

impl AlwaysStore {
    /// The store in `state_dir`, read once to check it (a missing file is an empty store;
    /// nothing is created until something is added).
    ///
    /// # Errors
    /// The file exists and cannot be read or is not a store.
    pub fn open(state_dir: &Path) -> Result<AlwaysStore, StoreError> {
        let store = AlwaysStore {
            path: state_dir.join(FILE_NAME),
            lock_path: state_dir.join(format!("{FILE_NAME}.lock")),
            cache: Mutex::new(None),
        };
        store.rules()?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rules as they are on disk now (re-read only when the file was replaced).
    ///
    /// # Errors
    /// The file cannot be read or is not a store.
    pub fn rules(&self) -> Result<Arc<[AlwaysRule]>, StoreError> {
        let stamp = self.stamp()?;
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.as_ref()
            && c.stamp == stamp
        {
            return Ok(c.rules.clone());
        }
        let rules: Arc<[AlwaysRule]> = Arc::from(self.read()?);
        *cache = Some(Cache { stamp, rules: rules.clone() });
        Ok(rules)
    }

    /// Every rule, oldest first.
    ///
    /// # Errors
    /// The file cannot be read or is not a store.
    pub fn list(&self) -> Result<Vec<AlwaysRule>, StoreError> {
        Ok(self.rules()?.to_vec())
    }

    /// Stores `rule` and gives its id. A rule for the same method, server, tool and principal
    /// is not stored twice: its id is given instead, and its definition digest becomes
    /// `rule`'s (the person allowed the tool as it is now).
    ///
    /// # Errors
    /// The file cannot be read, locked or written.
    pub fn add(&self, mut rule: AlwaysRule) -> Result<String, StoreError> {
        self.change(|rules| {
            if let Some(same) = rules.iter_mut().find(|r| r.same_target(&rule)) {
                let rebound = same.definition != rule.definition;
                same.definition = rule.definition;
                return (rebound, same.id.clone());
            }
            let mut id = new_id();
            while rules.iter().any(|r| r.id == id) {
                id = new_id();
            }
            rule.id.clone_from(&id);
            if rule.created_at == 0 {
                rule.created_at = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            }
            rules.push(rule);
            (true, id)
        })
    }

    /// Removes the rule `id`; `false` when there is none.
    ///
    /// # Errors
    /// The file cannot be read, locked or written.
    pub fn revoke(&self, id: &str) -> Result<bool, StoreError> {
        self.change(|rules| {
            let before = rules.len();
            rules.retain(|r| r.id != id);
            let removed = rules.len() != before;
            (removed, removed)
        })
    }

    fn io(&self, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    }

    fn stamp(&self) -> Result<Option<Stamp>, StoreError> {
        match fs::metadata(&self.path) {
            Ok(m) => Ok(Some(Stamp { inode: inode(&m), len: m.len(), modified: m.modified().ok() })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io(&self.path)(e)),
        }
    }

    fn read(&self) -> Result<Vec<AlwaysRule>, StoreError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(&self.path)(e)),
        };
        let corrupt = |message: String| StoreError::Corrupt { path: self.path.clone(), message };
        let file: StoreFile = serde_json::from_str(&text).map_err(|e| corrupt(format!("line {}", e.line())))?;
        if file.version != VERSION {
            return Err(corrupt(format!("format version {} (this build reads {VERSION})", file.version)));
        }
        Ok(file.rules)
    }

    /// Reads, changes and (when `f` says so) writes the rules under the lock.
    fn change<T>(&self, f: impl FnOnce(&mut Vec<AlwaysRule>) -> (bool, T)) -> Result<T, StoreError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(self.io(dir))?;
        let lock = private_options().create(true).truncate(false).write(true).open(&self.lock_path);
        let lock = lock.map_err(self.io(&self.lock_path))?;
        lock.lock().map_err(self.io(&self.lock_path))?;
        let mut rules = self.read()?;
        let (changed, out) = f(&mut rules);
        if changed {
            let text = serde_json::to_vec_pretty(&StoreFile { version: VERSION, rules: rules.clone() })
                .map_err(|e| StoreError::Corrupt { path: self.path.clone(), message: e.to_string() })?;
            write_atomically(&self.path, &text).map_err(self.io(&self.path))?;
            let stamp = self.stamp()?;
            *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = Some(Cache { stamp, rules: Arc::from(rules) });
        }
        drop(lock);
        Ok(out)
    }
}

fn new_id() -> String {
    format!("{:08x}", rand::random::<u32>())
}

#[cfg(unix)]
fn inode(m: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(not(unix))]
fn inode(_: &fs::Metadata) -> u64 {
    0
}

fn private_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Writes `bytes` to a new file beside `path` (mode 0600), syncs it, and renames it over
/// `path`, so a reader sees the old file or the new one, never part of one.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(FILE_NAME);
    let tmp = dir.join(format!(".{name}.{}.{:08x}.tmp", std::process::id(), rand::random::<u32>()));
    let result = (|| {
        let mut file = private_options().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        // The rename itself is durable once the directory is synced.
        File::open(dir).and_then(|d| d.sync_all())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
