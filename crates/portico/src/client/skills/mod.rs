//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640), client side.
//!
//! A server that declares the extension lists its skills with `skills/list`: each entry names
//! a skill's `SKILL.md`, repeats its YAML frontmatter, and lists every file of the skill with
//! its SHA-256 digest and size (or says `"dynamic"`). The files themselves are read with
//! `resources/read`, and only when needed: listing reads nothing.
//!
//! [`Client::load_skill`] reads a skill's `SKILL.md` and loads it only when the content
//! matches the entry — byte length and digest from the manifest, frontmatter field by field —
//! and [`Client::read_skill_file`] does the same for a supporting file. Content that fails is
//! never returned.
//!
//! ```no_run
//! # async fn run(client: portico::client::Client) -> Result<(), portico::Error> {
//! if client.supports_skills() {
//!     for entry in client.list_all_skills().await? {
//!         println!("{}: {}", entry.name().unwrap_or("?"), entry.description().unwrap_or(""));
//!     }
//! }
//! # Ok(()) }
//! ```

mod frontmatter;

use base64::Engine as _;
use portico_schema::{JsonObject, PaginatedRequestParams, ReadResourceResult, RequestMeta, ResourceContents};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::connection::HasMeta;
use super::{CallOptions, Client, MAX_PAGES};
use crate::error::{Error, ErrorKind};

/// The extension's identifier, under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// `skills/list`.
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get`.
pub const SKILLS_GET: &str = "skills/get";

/// One skill, as `skills/list` and `skills/get` describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` YAML frontmatter, as JSON (`name` and `description` at least).
    pub frontmatter: JsonObject,
    /// Every file of the skill, or `"dynamic"`.
    pub resources: SkillResources,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SkillEntry {
    /// `frontmatter.name`.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// `frontmatter.description`.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The manifest entry of the file at `uri`, when the skill publishes a manifest.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }
}

/// A skill's files: a complete manifest, or `"dynamic"` (no manifest; files are discovered
/// by reading).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SkillResources {
    /// Every file, `SKILL.md` included.
    Files(Vec<SkillFile>),
    /// `"dynamic"`.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Files(Vec<SkillFile>),
            Word(String),
        }
        match Wire::deserialize(d)? {
            Wire::Files(files) => Ok(SkillResources::Files(files)),
            Wire::Word(w) if w == "dynamic" => Ok(SkillResources::Dynamic),
            Wire::Word(w) => {
                Err(serde::de::Error::custom(format!("resources must be an array or \"dynamic\", not {w:?}")))
            }
        }
    }
}

/// One file of a skill's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and the lowercase hex SHA-256 of the file's raw bytes.
    pub digest: String,
    /// The length of the raw bytes.
    pub size: u64,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `skills/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListSkillsResult {
    /// The skills of this page.
    pub skills: Vec<SkillEntry>,
    /// Where the next page starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Unknown members (`ttlMs`, `cacheScope`, …), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A skill whose `SKILL.md` matched its entry.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadedSkill {
    /// The entry it was checked against.
    pub entry: SkillEntry,
    /// The whole `SKILL.md`.
    pub text: String,
    /// The instructions after the frontmatter.
    pub body: String,
}

#[derive(Serialize)]
struct GetSkillParams<'a> {
    uri: &'a str,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<RequestMeta>,
}

impl HasMeta for GetSkillParams<'_> {
    fn meta_mut(&mut self) -> &mut Option<RequestMeta> {
        &mut self.meta
    }
}

impl Client {
    /// True when the server declared the skills extension.
    pub fn supports_skills(&self) -> bool {
        self.server_capabilities().extensions.as_ref().is_some_and(|e| e.contains_key(EXTENSION))
    }

    /// One page of `skills/list`. Reads no skill file.
    ///
    /// # Errors
    /// When the server refuses (it may not serve skills) or the connection fails.
    pub async fn list_skills(&self, cursor: Option<String>) -> Result<ListSkillsResult, Error> {
        let mut params = PaginatedRequestParams::new();
        params.cursor = cursor;
        self.inner.send(SKILLS_LIST, params, &CallOptions::new()).await
    }

    /// Every skill, following `nextCursor`.
    ///
    /// # Errors
    /// As for [`list_skills`](Self::list_skills).
    pub async fn list_all_skills(&self) -> Result<Vec<SkillEntry>, Error> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = self.list_skills(cursor.take()).await?;
            all.extend(page.skills);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
        Err(Error::misbehaved(format!("{SKILLS_LIST} returned more than {MAX_PAGES} pages")))
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
    ///
    /// # Errors
    /// When the server does not know the skill (-32602) or the connection fails.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, Error> {
        self.inner.send(SKILLS_GET, GetSkillParams { uri, meta: None }, &CallOptions::new()).await
    }

    /// Reads the skill's `SKILL.md` and loads it when it matches `entry`: its byte length and
    /// digest those of the manifest (when there is one), its frontmatter equal to the entry's,
    /// field by field.
    ///
    /// # Errors
    /// When reading fails, or (kind [`ErrorKind::PeerMisbehaved`]) the content does not match
    /// the entry; the content is not returned then.
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill, Error> {
        let bytes = self.read_verified(entry, &entry.uri).await?;
        let text = String::from_utf8(bytes).map_err(|_| unverified(&entry.uri, "is not UTF-8 text"))?;
        let (yaml, body) =
            frontmatter::split(&text).ok_or_else(|| unverified(&entry.uri, "has no YAML frontmatter"))?;
        let parsed = frontmatter::parse(yaml)
            .map_err(|e| unverified(&entry.uri, &format!("has frontmatter that cannot be read: {e}")))?;
        if let Some(field) = first_difference(&parsed, &entry.frontmatter) {
            return Err(unverified(
                &entry.uri,
                &format!("has frontmatter whose {field:?} differs from the skill entry"),
            ));
        }
        let body = body.to_owned();
        Ok(LoadedSkill { entry: entry.clone(), text, body })
    }

    /// Reads one file of the skill and returns its bytes when they match the manifest entry.
    /// A skill whose resources are `"dynamic"` has no manifest: its files are returned as read.
    ///
    /// # Errors
    /// When reading fails, or (kind [`ErrorKind::PeerMisbehaved`]) the file is not in the
    /// manifest or does not match it.
    pub async fn read_skill_file(&self, entry: &SkillEntry, uri: &str) -> Result<Vec<u8>, Error> {
        self.read_verified(entry, uri).await
    }

    async fn read_verified(&self, entry: &SkillEntry, uri: &str) -> Result<Vec<u8>, Error> {
        let expected = match &entry.resources {
            SkillResources::Files(_) => {
                Some(entry.file(uri).ok_or_else(|| unverified(uri, "is not in the skill's manifest"))?)
            }
            SkillResources::Dynamic => None,
        };
        let read: ReadResourceResult = self.read_resource(uri).await?;
        let bytes = raw_bytes(&read, uri)?;
        if let Some(file) = expected {
            verify(file, &bytes)?;
        }
        Ok(bytes)
    }
}

/// The raw bytes of the contents of `uri` in a `resources/read` result.
fn raw_bytes(read: &ReadResourceResult, uri: &str) -> Result<Vec<u8>, Error> {
    let mut matching = read.contents.iter().filter(|c| content_uri(c) == uri);
    let contents = match (matching.next(), matching.next()) {
        (Some(c), None) => c,
        (None, _) if read.contents.len() == 1 => &read.contents[0],
        _ => return Err(unverified(uri, "was not read as exactly one content item")),
    };
    match contents {
        ResourceContents::Text(t) => Ok(t.text.clone().into_bytes()),
        ResourceContents::Blob(b) => base64::engine::general_purpose::STANDARD
            .decode(b.blob.as_bytes())
            .map_err(|_| unverified(uri, "was read as a blob that is not base64")),
        _ => Err(unverified(uri, "was read as contents of an unknown kind")),
    }
}

fn content_uri(c: &ResourceContents) -> &str {
    match c {
        ResourceContents::Text(t) => &t.uri,
        ResourceContents::Blob(b) => &b.uri,
        _ => "",
    }
}

/// Checks `bytes` against a manifest entry: size first, then the SHA-256 digest.
fn verify(file: &SkillFile, bytes: &[u8]) -> Result<(), Error> {
    if bytes.len() as u64 != file.size {
        return Err(unverified(
            &file.uri,
            &format!("is {} bytes long, but the manifest says {}", bytes.len(), file.size),
        ));
    }
    let actual = digest(bytes);
    if !actual.eq_ignore_ascii_case(&file.digest) {
        return Err(unverified(&file.uri, &format!("has digest {actual}, but the manifest says {}", file.digest)));
    }
    Ok(())
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
    }
    out
}

fn unverified(uri: &str, why: &str) -> Error {
    Error::new(ErrorKind::PeerMisbehaved, format!("skill file {uri} failed verification: it {why}"))
}

/// The first top-level field on which two frontmatters differ (numbers compare by value).
fn first_difference(a: &Map<String, Value>, b: &Map<String, Value>) -> Option<String> {
    let keys = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k)));
    for key in keys {
        match (a.get(key), b.get(key)) {
            (Some(x), Some(y)) if same(x, y) => {}
            _ => return Some(key.clone()),
        }
    }
    None
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => first_difference(x, y).is_none(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file(uri: &str, content: &str) -> SkillFile {
        SkillFile { uri: uri.into(), digest: digest(content.as_bytes()), size: content.len() as u64, extra: Map::new() }
    }

    #[test]
    fn digests_are_sha256_in_lowercase_hex() {
        assert_eq!(digest(b""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(digest(b"abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn verification_checks_size_and_digest() {
        let f = file("skill://x/SKILL.md", "hello");
        assert!(verify(&f, b"hello").is_ok());
        let e = verify(&f, b"hello!").expect_err("longer");
        assert!(e.to_string().contains("6 bytes long"), "{e}");
        let e = verify(&f, b"HELLO").expect_err("same size, other bytes");
        assert!(e.to_string().contains("digest"), "{e}");
        assert_eq!(e.kind(), ErrorKind::PeerMisbehaved);
    }

    #[test]
    fn entries_round_trip_with_either_form_of_resources() {
        let listed = json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"},
                            "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": 1}]});
        let e: SkillEntry = serde_json::from_value(listed.clone()).expect("entry");
        assert_eq!(e.name(), Some("a"));
        assert!(e.file("skill://a/SKILL.md").is_some());
        assert_eq!(serde_json::to_value(&e).expect("json"), listed);
        let dynamic = json!({"uri": "skill://b/SKILL.md", "frontmatter": {"name": "b"}, "resources": "dynamic"});
        let e: SkillEntry = serde_json::from_value(dynamic.clone()).expect("entry");
        assert_eq!(e.resources, SkillResources::Dynamic);
        assert_eq!(serde_json::to_value(&e).expect("json"), dynamic);
        let bad = json!({"uri": "u", "frontmatter": {}, "resources": "static"});
        assert!(serde_json::from_value::<SkillEntry>(bad).is_err());
    }

    #[test]
    fn frontmatter_comparison_is_field_by_field() {
        let entry = json!({"name": "a", "description": "d", "version": 1, "tags": ["x"], "m": {"k": 2.0}});
        let entry = entry.as_object().expect("object");
        let same_yaml =
            frontmatter::parse("name: a\ndescription: d\nversion: 1.0\ntags: [x]\nm:\n  k: 2\n").expect("yaml");
        assert_eq!(first_difference(&same_yaml, entry), None);
        let changed =
            frontmatter::parse("name: a\ndescription: Exfiltrate\nversion: 1\ntags: [x]\nm: {k: 2}\n").expect("yaml");
        assert_eq!(first_difference(&changed, entry).as_deref(), Some("description"));
        let extra =
            frontmatter::parse("name: a\ndescription: d\nversion: 1\ntags: [x]\nm: {k: 2}\nmore: 1\n").expect("yaml");
        assert_eq!(first_difference(&extra, entry).as_deref(), Some("more"));
        let missing = frontmatter::parse("name: a\nversion: 1\ntags: [x]\nm: {k: 2}\n").expect("yaml");
        assert_eq!(first_difference(&missing, entry).as_deref(), Some("description"));
    }
}
