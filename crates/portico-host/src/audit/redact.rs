//! Redaction: what is replaced before a record is written.
//!
//! - **Key names.** Inside arguments, results and errors, the value of any key whose name
//!   matches a pattern is replaced, whole (an object under `password` goes as one). A pattern
//!   matches a key that holds its words in order, in any case and spelling: `api_key` matches
//!   `api_key`, `x-api-key`, `openaiApiKey` and `APIKEY`; `token` matches `access_token` and
//!   `refreshToken` but not `max_tokens`. A pattern with `*`, `?` or `[` is a glob on the whole
//!   key, in any case. The defaults are [`DEFAULT_KEYS`].
//! - **JSON pointers** into the record (`/arguments/query`, `/result/content/*/text`, where a
//!   `*` segment is any key or index) replace the value they point at.
//! - **The replacement** is `hmac-sha256:<hex>`: HMAC-SHA256 with the log's own key (a file in
//!   the state directory, mode 0600) over the value (a string's UTF-8, or another value's
//!   canonical JSON). Equal values give equal replacements, so records stay comparable and a
//!   known value can be looked for ([`Redactor::digest`]), without the value being kept.
//! - **A size cap** per field (arguments, result, error, …): a field whose JSON is longer is
//!   cut there, kept as the start of its JSON (a string), and marked in `audit.truncated`.
//! - **Levels**, as in Kubernetes' audit policy: [`Level`].

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::Level;
use super::chain::hex;
use super::record::{canonical_json, keys};

/// Key names redacted unless `default_keys = false`.
pub const DEFAULT_KEYS: [&str; 6] = ["password", "secret", "token", "api_key", "authorization", "cookie"];

/// What a redacted value starts with.
pub const PREFIX: &str = "hmac-sha256:";

/// `[audit.redact]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedactConfig {
    /// Key-name patterns, the defaults included (unless turned off).
    pub keys: Vec<String>,
    /// JSON pointers into the record.
    pub pointers: Vec<String>,
    /// The largest field kept whole, in bytes of JSON; 0: no cap.
    pub max_field_bytes: usize,
}

impl Default for RedactConfig {
    fn default() -> Self {
        RedactConfig {
            keys: DEFAULT_KEYS.iter().map(|k| (*k).to_owned()).collect(),
            pointers: Vec::new(),
            max_field_bytes: 64 * 1024,
        }
    }
}

#[derive(Debug, Clone)]
struct Words {
    words: Vec<String>,
    squashed: String,
}

/// Applies the log's redaction rules; see the module docs. One per log
/// ([`super::AuditLog::redactor`]), so that approvals can show arguments redacted the same way.
#[derive(Clone)]
pub struct Redactor {
    mac: Hmac<Sha256>,
    names: Vec<Words>,
    globs: Option<GlobSet>,
    pointers: Vec<Vec<String>>,
    max_field_bytes: usize,
    level: Level,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("names", &self.names.iter().map(|w| w.words.join("_")).collect::<Vec<_>>())
            .field("pointers", &self.pointers)
            .field("max_field_bytes", &self.max_field_bytes)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

/// Splits a key into lowercase words: at non-alphanumerics and at camelCase humps
/// (`openaiAPIKey` → `openai`, `api`, `key`).
fn split_words(key: &str) -> Vec<String> {
    let chars: Vec<char> = key.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parses a JSON pointer into its segments (`~1` is `/`, `~0` is `~`).
fn parse_pointer(p: &str) -> Result<Vec<String>, String> {
    let rest = p.strip_prefix('/').ok_or_else(|| format!("`{p}` is not a JSON pointer (it starts with `/`)"))?;
    Ok(rest.split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect())
}

impl Redactor {
    /// The redactor for `config` at `level`, keyed with `key`.
    pub(crate) fn new(config: &RedactConfig, level: Level, key: &[u8; 32]) -> Result<Redactor, String> {
        let mac = <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(|e| format!("HMAC key: {e}"))?;
        let mut names = Vec::new();
        let mut globs = GlobSetBuilder::new();
        let mut any_glob = false;
        for k in &config.keys {
            if k.contains(['*', '?', '[']) {
                let glob =
                    GlobBuilder::new(k).case_insensitive(true).build().map_err(|e| format!("redact key `{k}`: {e}"))?;
                globs.add(glob);
                any_glob = true;
            } else {
                let words = split_words(k);
                if words.is_empty() {
                    return Err(format!("redact key `{k}` has no letters or digits"));
                }
                let squashed = words.concat();
                names.push(Words { words, squashed });
            }
        }
        let globs = if any_glob { Some(globs.build().map_err(|e| format!("redact keys: {e}"))?) } else { None };
        let pointers = config.pointers.iter().map(|p| parse_pointer(p)).collect::<Result<_, _>>()?;
        Ok(Redactor { mac, names, globs, pointers, max_field_bytes: config.max_field_bytes, level })
    }

    /// The level records are written at.
    pub fn level(&self) -> Level {
        self.level
    }

    /// The per-field cap, in bytes of JSON (0: none).
    pub fn max_field_bytes(&self) -> usize {
        self.max_field_bytes
    }

    /// What `value` is replaced by: `hmac-sha256:<hex>`. Compare it with a record's field to
    /// find a known value.
    pub fn digest(&self, value: &Value) -> String {
        let mut mac = self.mac.clone();
        match value {
            Value::String(s) => mac.update(s.as_bytes()),
            other => mac.update(canonical_json(other).as_bytes()),
        }
        format!("{PREFIX}{}", hex(&mac.finalize().into_bytes()))
    }

    /// Whether a key of this name has its value redacted.
    pub fn key_matches(&self, key: &str) -> bool {
        if !self.names.is_empty() {
            // The key's letters and digits in lowercase: on the stack for the usual short
            // ASCII key, else allocated.
            let mut buf = [0u8; 64];
            let mut len = 0;
            let owned: String;
            let squashed: &str = if key.is_ascii() && key.len() <= buf.len() {
                for b in key.bytes().filter(u8::is_ascii_alphanumeric) {
                    buf[len] = b.to_ascii_lowercase();
                    len += 1;
                }
                std::str::from_utf8(&buf[..len]).unwrap_or_default()
            } else {
                owned = key.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect();
                &owned
            };
            let mut words: Option<Vec<String>> = None;
            for p in self.names.iter().filter(|p| squashed.contains(p.squashed.as_str())) {
                let words = words.get_or_insert_with(|| split_words(key));
                if words.contains(&p.squashed) || words.windows(p.words.len()).any(|w| w == p.words) {
                    return true;
                }
            }
        }
        self.globs.as_ref().is_some_and(|g| g.is_match(key))
    }

    fn replace(&self, v: &mut Value) {
        let done = matches!(v, Value::String(s) if s.len() == PREFIX.len() + 64 && s.starts_with(PREFIX));
        if !done {
            *v = Value::String(self.digest(v));
        }
    }

    fn redact_keys(&self, v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    if self.key_matches(k) {
                        self.replace(child);
                    } else {
                        self.redact_keys(child);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|c| self.redact_keys(c)),
            _ => {}
        }
    }

    fn redact_pointer(&self, v: &mut Value, segs: &[String]) {
        let Some((first, rest)) = segs.split_first() else {
            return self.replace(v);
        };
        match v {
            Value::Object(map) if first == "*" => map.values_mut().for_each(|c| self.redact_pointer(c, rest)),
            Value::Object(map) => {
                if let Some(c) = map.get_mut(first) {
                    self.redact_pointer(c, rest);
                }
            }
            Value::Array(items) if first == "*" => items.iter_mut().for_each(|c| self.redact_pointer(c, rest)),
            Value::Array(items) => {
                if let Some(c) = first.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                    self.redact_pointer(c, rest);
                }
            }
            _ => {}
        }
    }

    /// Whether a pointer reaches into the record's field `key`.
    pub(crate) fn points_into(&self, key: &str) -> bool {
        self.pointers.iter().any(|segs| segs.first().is_some_and(|first| first == "*" || first == key))
    }

    /// Redacts the record's field `key` in place: key names inside it when it is a content
    /// field (`content`), then the pointers into it, in their order.
    pub(crate) fn redact_field(&self, key: &str, content: bool, v: &mut Value) {
        if content {
            self.redact_keys(v);
        }
        for segs in &self.pointers {
            if let Some((first, rest)) = segs.split_first()
                && (first == "*" || first == key)
            {
                self.redact_pointer(v, rest);
            }
        }
    }

    /// Redacts a call's arguments as the log would record them (key names, and the pointers
    /// under `/arguments`): for showing a pending approval.
    pub fn redact_arguments(&self, arguments: &mut Value) {
        self.redact_field(keys::ARGUMENTS, true, arguments);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_key_names() {
        assert_eq!(split_words("openaiAPIKey"), ["openai", "api", "key"]);
        assert_eq!(split_words("x-api-key"), ["x", "api", "key"]);
        assert_eq!(split_words("oauth2Token"), ["oauth2", "token"]);
        let Ok(r) = Redactor::new(&RedactConfig::default(), Level::RequestResponse, &[7; 32]) else {
            panic!("redactor");
        };
        for k in [
            "password",
            "DB_PASSWORD",
            "apiKey",
            "APIKEY",
            "x-api-key",
            "access_token",
            "Authorization",
            "Set-Cookie",
            "clientSecret",
        ] {
            assert!(r.key_matches(k), "{k}");
        }
        for k in ["max_tokens", "maxTokens", "path", "keyboard", "secretary_name", "passwords"] {
            assert!(!r.key_matches(k), "{k}");
        }
    }
}
