//! Where tokens are kept between runs: the [`TokenStore`] trait, in memory or in a file.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::AuthError;
use crate::sync::lock;

/// The tokens of one authorization.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenSet {
    /// The access token, sent as `Authorization: Bearer …`.
    pub access_token: String,
    /// The token type the server gave (`Bearer`).
    #[serde(default)]
    pub token_type: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (or requested, when the server did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl TokenSet {
    /// A set holding only `access_token`.
    pub fn new(access_token: impl Into<String>) -> Self {
        TokenSet { access_token: access_token.into(), token_type: "Bearer".into(), ..Default::default() }
    }

    /// True when the access token has expired, or expires within `margin_secs`.
    pub fn is_expired(&self, margin_secs: u64) -> bool {
        self.expires_at.is_some_and(|at| now_secs().saturating_add(margin_secs) >= at)
    }
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Client credentials obtained from (or configured for) one authorization server.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientInfo {
    /// The `client_id` (a URL for a Client ID Metadata Document).
    pub client_id: String,
    /// The `client_secret` of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The token endpoint auth method the server assigned, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

impl ClientInfo {
    /// A public client (`none`), or a confidential one with `secret`.
    pub fn new(client_id: impl Into<String>, secret: Option<String>) -> Self {
        ClientInfo { client_id: client_id.into(), client_secret: secret, token_endpoint_auth_method: None }
    }
}

impl std::fmt::Debug for ClientInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientInfo")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .finish()
    }
}

/// Everything needed to use and refresh the tokens of one MCP server without discovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredAuth {
    /// The issuer of the authorization server that issued the tokens.
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The RFC 8707 resource the tokens are for.
    pub resource: String,
    /// The client credentials used with that issuer.
    pub client: ClientInfo,
    /// The tokens.
    pub tokens: TokenSet,
}

/// Keeps tokens between runs, keyed by the MCP server's canonical URI.
///
/// Calls are synchronous and short (a map, a small file); they are made while the OAuth
/// client holds its lock, never concurrently for one client.
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens saved for `resource`, if any.
    ///
    /// # Errors
    /// When the store cannot be read.
    fn load(&self, resource: &str) -> Result<Option<StoredAuth>, AuthError>;
    /// Saves (replaces) the tokens of `resource`.
    ///
    /// # Errors
    /// When the store cannot be written.
    fn save(&self, resource: &str, auth: &StoredAuth) -> Result<(), AuthError>;
    /// Forgets the tokens of `resource`.
    ///
    /// # Errors
    /// When the store cannot be written.
    fn remove(&self, resource: &str) -> Result<(), AuthError>;
}

/// Tokens in memory only: gone when the process ends (the default).
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    map: Mutex<HashMap<String, StoredAuth>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, resource: &str) -> Result<Option<StoredAuth>, AuthError> {
        Ok(lock(&self.map).get(resource).cloned())
    }
    fn save(&self, resource: &str, auth: &StoredAuth) -> Result<(), AuthError> {
        lock(&self.map).insert(resource.to_owned(), auth.clone());
        Ok(())
    }
    fn remove(&self, resource: &str) -> Result<(), AuthError> {
        lock(&self.map).remove(resource);
        Ok(())
    }
}

/// Tokens in one JSON file, readable and writable by the owner only (mode `0600` on Unix).
///
/// The file is replaced atomically (written beside, then renamed) on every save.
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    guard: Mutex<()>,
}

impl FileTokenStore {
    /// A store in the file at `path` (created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTokenStore { path: path.into(), guard: Mutex::new(()) }
    }

    fn read_all(&self) -> Result<HashMap<String, StoredAuth>, AuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) if bytes.is_empty() => Ok(HashMap::new()),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                AuthError::Store(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} is not a token file: {e}", self.path.display()),
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HashMap::new()),
            Err(e) => Err(AuthError::Store(e)),
        }
    }

    fn write_all(&self, map: &HashMap<String, StoredAuth>) -> Result<(), AuthError> {
        let json = serde_json::to_vec_pretty(map)
            .map_err(|e| AuthError::Store(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        write_private(&tmp, &json).map_err(AuthError::Store)?;
        std::fs::rename(&tmp, &self.path).map_err(AuthError::Store)
    }
}

/// Writes `bytes` to a new file at `path` that only its owner can read.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        opts.mode(0o600);
        let mut f = opts.open(path)?;
        // An existing file keeps its mode through open(): narrow it.
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        f.write_all(bytes)?;
        f.sync_all()
    }
    #[cfg(not(unix))]
    {
        let mut f = opts.open(path)?;
        f.write_all(bytes)?;
        f.sync_all()
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self, resource: &str) -> Result<Option<StoredAuth>, AuthError> {
        let _one = lock(&self.guard);
        Ok(self.read_all()?.remove(resource))
    }
    fn save(&self, resource: &str, auth: &StoredAuth) -> Result<(), AuthError> {
        let _one = lock(&self.guard);
        let mut map = self.read_all()?;
        map.insert(resource.to_owned(), auth.clone());
        self.write_all(&map)
    }
    fn remove(&self, resource: &str) -> Result<(), AuthError> {
        let _one = lock(&self.guard);
        let mut map = self.read_all()?;
        if map.remove(resource).is_some() {
            self.write_all(&map)?;
        }
        Ok(())
    }
}
