//! Sealed `requestState` for multi-round-trip requests (MCP 2026-07-28).
//!
//! A server that needs input from the client (elicitation, sampling, roots)
//! answers with `resultType: "input_required"` and an opaque `requestState`
//! string; the client retries the same request echoing that string. The
//! string travels through the client, so the server must treat it as
//! attacker-controlled. [`StateSealer`] makes it safe to use:
//!
//! * **Integrity and confidentiality**: the payload is encrypted with
//!   XChaCha20-Poly1305 under a server-held key.
//! * **Binding**: the AEAD associated data includes a caller-supplied
//!   *binding* (see [`request_binding`]) naming the request the state belongs
//!   to: method, tool/prompt name or resource URI, arguments, principal. State
//!   minted for one request is refused for any other.
//! * **Freshness**: an expiry (default [`DEFAULT_TTL`]) is sealed inside the
//!   ciphertext; stale state is refused.
//! * **Key rotation**: a sealer can accept states sealed under previous keys
//!   while sealing only under its current one.
//!
//! # Wire format
//!
//! The sealed string is URL-safe base64 without padding of
//!
//! ```text
//! version (1 byte) || key id (u32 BE) || nonce (24 bytes) || ciphertext || tag (16 bytes)
//! ```
//!
//! where the AEAD plaintext is `expiry (u64 BE unix seconds) || payload` and
//! the associated data is `version || key id || binding`.
//!
//! ```
//! use portico::server::sealed::{StateSealer, request_binding};
//!
//! let sealer = StateSealer::random();
//! let args = serde_json::json!({"city": "Paris"});
//! let binding = request_binding("tools/call", "weather", Some(&args), Some("alice"));
//! let state = sealer.seal(&binding, b"step=2");
//! assert_eq!(sealer.open(&binding, &state).expect("fresh state opens"), b"step=2");
//!
//! let other = request_binding("tools/call", "weather", Some(&args), Some("mallory"));
//! assert!(sealer.open(&other, &state).is_err());
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use rand::RngCore as _;

/// The format version byte written at the start of every sealed state.
pub const STATE_VERSION: u8 = 1;

/// The longest sealed string [`StateSealer::open`] will look at, in bytes
/// (256 KiB). Longer input is refused as [`StateError::Malformed`] before any
/// decoding or cryptographic work is done.
pub const MAX_SEALED_LEN: usize = 256 * 1024;

/// The largest payload whose sealed form still fits in [`MAX_SEALED_LEN`].
///
/// [`StateSealer::seal`] does not refuse larger payloads, but the resulting
/// string would be refused by [`StateSealer::open`].
pub const MAX_PAYLOAD_LEN: usize = MAX_SEALED_LEN / 4 * 3 - OVERHEAD;

/// How long a sealed state stays valid unless [`StateSealer::with_ttl`] says
/// otherwise: 10 minutes.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10 * 60);

const KEY_ID_LEN: usize = 4;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
const EXPIRY_LEN: usize = 8;
/// `version || key id || nonce`.
const HEADER_LEN: usize = 1 + KEY_ID_LEN + NONCE_LEN;
/// Everything a sealed state carries besides the payload.
const OVERHEAD: usize = HEADER_LEN + EXPIRY_LEN + TAG_LEN;

/// Why a sealed state was refused.
///
/// The variants are deliberately coarse: callers should answer all of them
/// the same way towards the client (an invalid-params error), and use the
/// variant only for logging.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not a sealed state at all: too long, too short, not base64, or an
    /// unknown format version.
    #[error("request state is malformed")]
    Malformed,
    /// Sealed under a key id this sealer does not hold (for example a key
    /// that has been rotated out).
    #[error("request state was sealed with an unknown key")]
    UnknownKey,
    /// Failed authentication: tampered with, sealed by someone else, or bound
    /// to a different request.
    #[error("request state is invalid for this request")]
    Invalid,
    /// Authentic, but past its expiry.
    #[error("request state has expired")]
    Expired,
}

/// A 256-bit XChaCha20-Poly1305 key with a numeric id.
///
/// The id is written in clear into every sealed state so that, during key
/// rotation, [`StateSealer::open`] can pick the right key. The key bytes are
/// wiped from memory when the key is dropped, and never shown by `Debug`.
#[derive(Clone)]
pub struct SealingKey {
    id: u32,
    cipher: XChaCha20Poly1305,
}

impl SealingKey {
    /// A key from explicit bytes, e.g. loaded from a secret store so that
    /// several server instances can open each other's states.
    pub fn new(id: u32, bytes: [u8; 32]) -> Self {
        let cipher = XChaCha20Poly1305::new(Key::from_slice(&bytes));
        SealingKey { id, cipher }
    }

    /// A fresh key from the operating system's cryptographic random source.
    pub fn generate(id: u32) -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let key = Self::new(id, bytes);
        bytes.fill(0);
        key
    }

    /// This key's id.
    pub fn id(&self) -> u32 {
        self.id
    }
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingKey").field("id", &self.id).finish_non_exhaustive()
    }
}

#[derive(Clone)]
struct SealerInner {
    current: SealingKey,
    previous: Vec<SealingKey>,
    ttl: Duration,
}

/// Seals and opens `requestState` strings. Cheap to clone (shared keys).
///
/// See the [module documentation](self) for the guarantees and format.
#[derive(Clone)]
pub struct StateSealer {
    inner: Arc<SealerInner>,
}

impl fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let previous: Vec<u32> = self.inner.previous.iter().map(SealingKey::id).collect();
        f.debug_struct("StateSealer")
            .field("current_key", &self.inner.current.id)
            .field("previous_keys", &previous)
            .field("ttl", &self.inner.ttl)
            .finish()
    }
}

impl StateSealer {
    /// A sealer that seals with `key`, with the [`DEFAULT_TTL`].
    pub fn new(key: SealingKey) -> Self {
        StateSealer { inner: Arc::new(SealerInner { current: key, previous: Vec::new(), ttl: DEFAULT_TTL }) }
    }

    /// A sealer with a freshly generated key (id 0).
    ///
    /// States it seals can only be opened by this sealer and its clones, so
    /// they do not survive a restart and are not shared between instances.
    pub fn random() -> Self {
        Self::new(SealingKey::generate(0))
    }

    /// Also accept states sealed under `key` (an older key being rotated
    /// out). Such keys are used by [`open`](Self::open), never by
    /// [`seal`](Self::seal).
    pub fn with_previous_key(mut self, key: SealingKey) -> Self {
        Arc::make_mut(&mut self.inner).previous.push(key);
        self
    }

    /// Rotate: seal with `key` from now on, and keep accepting states sealed
    /// under the key that was current until now.
    pub fn rotate(mut self, key: SealingKey) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        let old = std::mem::replace(&mut inner.current, key);
        inner.previous.insert(0, old);
        self
    }

    /// Stop accepting states sealed under any key but the current one.
    pub fn without_previous_keys(mut self) -> Self {
        Arc::make_mut(&mut self.inner).previous.clear();
        self
    }

    /// How long sealed states stay valid (whole seconds; a fraction rounds up).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        Arc::make_mut(&mut self.inner).ttl = ttl;
        self
    }

    /// The time-to-live given to newly sealed states.
    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// The id of the key new states are sealed under.
    pub fn current_key_id(&self) -> u32 {
        self.inner.current.id
    }

    /// Seal `plaintext` for the request identified by `binding`; it expires
    /// after the sealer's TTL.
    ///
    /// Keep `plaintext` under [`MAX_PAYLOAD_LEN`] bytes, or the result will be
    /// refused by [`open`](Self::open).
    pub fn seal(&self, binding: &[u8], plaintext: &[u8]) -> String {
        self.seal_at(binding, plaintext, SystemTime::now())
    }

    /// [`seal`](Self::seal) as if the current time were `now`.
    #[doc(hidden)]
    pub fn seal_at(&self, binding: &[u8], plaintext: &[u8], now: SystemTime) -> String {
        debug_assert!(plaintext.len() <= MAX_PAYLOAD_LEN, "sealed state payload too large to be opened again");
        let key = &self.inner.current;
        let expiry = unix_seconds(now).checked_add(self.inner.ttl).map_or(u64::MAX, ceil_seconds);

        let mut raw = Vec::with_capacity(OVERHEAD + plaintext.len());
        raw.push(STATE_VERSION);
        raw.extend_from_slice(&key.id.to_be_bytes());
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        raw.extend_from_slice(&nonce);

        let mut msg = Vec::with_capacity(EXPIRY_LEN + plaintext.len());
        msg.extend_from_slice(&expiry.to_be_bytes());
        msg.extend_from_slice(plaintext);
        let aad = associated_data(&raw[..1 + KEY_ID_LEN], binding);
        let ciphertext = key
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: &msg, aad: &aad })
            // XChaCha20-Poly1305 only fails for messages of 256 GiB or more,
            // which cannot be held in memory alongside their ciphertext.
            .expect("XChaCha20-Poly1305 encryption of an in-memory message");
        msg.fill(0);
        raw.extend_from_slice(&ciphertext);
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// Open a state sealed by this sealer (or one sharing its keys) for the
    /// request identified by `binding`, returning the payload.
    pub fn open(&self, binding: &[u8], sealed: &str) -> Result<Vec<u8>, StateError> {
        self.open_at(binding, sealed, SystemTime::now())
    }

    /// [`open`](Self::open) as if the current time were `now`.
    #[doc(hidden)]
    pub fn open_at(&self, binding: &[u8], sealed: &str, now: SystemTime) -> Result<Vec<u8>, StateError> {
        if sealed.len() > MAX_SEALED_LEN {
            return Err(StateError::Malformed);
        }
        let raw = URL_SAFE_NO_PAD.decode(sealed.as_bytes()).map_err(|_| StateError::Malformed)?;
        if raw.len() < OVERHEAD {
            return Err(StateError::Malformed);
        }
        let (header, ciphertext) = raw.split_at(HEADER_LEN);
        let (prefix, nonce) = header.split_at(1 + KEY_ID_LEN);
        if prefix[0] != STATE_VERSION {
            return Err(StateError::Malformed);
        }
        let mut id = [0u8; KEY_ID_LEN];
        id.copy_from_slice(&prefix[1..]);
        let id = u32::from_be_bytes(id);

        let aad = associated_data(prefix, binding);
        let nonce = XNonce::from_slice(nonce);
        let mut known = false;
        let mut opened = None;
        for key in std::iter::once(&self.inner.current).chain(&self.inner.previous) {
            if key.id != id {
                continue;
            }
            known = true;
            let payload = Payload { msg: ciphertext, aad: &aad };
            if let Ok(plain) = key.cipher.decrypt(nonce, payload) {
                opened = Some(plain);
                break;
            }
        }
        let mut plain = match opened {
            Some(plain) => plain,
            None if known => return Err(StateError::Invalid),
            None => return Err(StateError::UnknownKey),
        };
        // The tag covered at least EXPIRY_LEN bytes of plaintext: checked above.
        let mut expiry = [0u8; EXPIRY_LEN];
        expiry.copy_from_slice(&plain[..EXPIRY_LEN]);
        let expiry = Duration::from_secs(u64::from_be_bytes(expiry));
        if unix_seconds(now) >= expiry {
            plain.fill(0);
            return Err(StateError::Expired);
        }
        Ok(plain.split_off(EXPIRY_LEN))
    }
}

fn associated_data(prefix: &[u8], binding: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(prefix.len() + binding.len());
    aad.extend_from_slice(prefix);
    aad.extend_from_slice(binding);
    aad
}

fn unix_seconds(t: SystemTime) -> Duration {
    t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO)
}

fn ceil_seconds(d: Duration) -> u64 {
    d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0))
}

/// Build a binding naming one request, for [`StateSealer::seal`] and
/// [`StateSealer::open`].
///
/// * `method`: the JSON-RPC method, e.g. `"tools/call"`.
/// * `target`: the tool or prompt name, or the resource URI.
/// * `arguments`: the request's arguments, if any. They are canonicalised
///   (object keys sorted, no whitespace) so that a retry that reorders keys
///   still matches, while any change of value does not.
/// * `principal`: who is calling (user or client identity), if known; state
///   minted for one principal is refused for another.
///
/// Each component is length-prefixed, so no two distinct requests produce the
/// same binding.
pub fn request_binding(
    method: &str,
    target: &str,
    arguments: Option<&serde_json::Value>,
    principal: Option<&str>,
) -> Vec<u8> {
    fn field(out: &mut Vec<u8>, value: Option<&[u8]>) {
        match value {
            None => out.push(0),
            Some(bytes) => {
                out.push(1);
                out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
                out.extend_from_slice(bytes);
            }
        }
    }
    let mut out = b"portico/request-state/v1\0".to_vec();
    field(&mut out, Some(method.as_bytes()));
    field(&mut out, Some(target.as_bytes()));
    let args = arguments.map(|v| {
        let mut s = String::new();
        canonical_json(v, &mut s);
        s
    });
    field(&mut out, args.as_deref().map(str::as_bytes));
    field(&mut out, principal.map(str::as_bytes));
    out
}

/// JSON with object keys sorted by their UTF-8 bytes and no whitespace.
fn canonical_json(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&Value::String(s.clone()).to_string()),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical_json(v, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BINDING: &[u8] = b"tools/call\0weather\0{\"city\":\"Paris\"}";

    fn t0() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    fn flip(sealed: &str, index: usize) -> String {
        let mut raw = URL_SAFE_NO_PAD.decode(sealed).expect("valid base64");
        raw[index] ^= 0x01;
        URL_SAFE_NO_PAD.encode(raw)
    }

    #[test]
    fn round_trip() {
        let sealer = StateSealer::random();
        for payload in [&b""[..], b"x", b"{\"step\":2,\"answers\":[]}", &[0u8; 4096]] {
            let sealed = sealer.seal(BINDING, payload);
            assert_eq!(sealer.open(BINDING, &sealed), Ok(payload.to_vec()));
            // URL-safe, unpadded.
            assert!(sealed.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        }
        // Clones share keys.
        let sealed = sealer.seal(BINDING, b"p");
        assert_eq!(sealer.clone().open(BINDING, &sealed), Ok(b"p".to_vec()));
    }

    #[test]
    fn nonces_differ() {
        let sealer = StateSealer::random();
        assert_ne!(sealer.seal(BINDING, b"p"), sealer.seal(BINDING, b"p"));
    }

    #[test]
    fn layout() {
        let sealer = StateSealer::new(SealingKey::new(0x0102_0304, [7; 32]));
        let sealed = sealer.seal(BINDING, b"abc");
        let raw = URL_SAFE_NO_PAD.decode(&sealed).expect("valid base64");
        assert_eq!(raw.len(), OVERHEAD + 3);
        assert_eq!(raw[0], STATE_VERSION);
        assert_eq!(&raw[1..5], &[1, 2, 3, 4]);
    }

    #[test]
    fn every_bit_flip_is_refused() {
        let sealer = StateSealer::new(SealingKey::new(5, [9; 32]));
        let sealed = sealer.seal(BINDING, b"payload");
        let len = URL_SAFE_NO_PAD.decode(&sealed).expect("valid base64").len();
        for i in 0..len {
            let tampered = flip(&sealed, i);
            let err = sealer.open(BINDING, &tampered).expect_err("tampered state must be refused");
            let expected = match i {
                0 => StateError::Malformed,      // version
                1..=4 => StateError::UnknownKey, // key id
                _ => StateError::Invalid,        // nonce, ciphertext, tag
            };
            assert_eq!(err, expected, "byte {i}");
        }
    }

    #[test]
    fn tampered_regions_are_invalid() {
        let sealer = StateSealer::random();
        let sealed = sealer.seal(BINDING, b"some payload");
        let len = URL_SAFE_NO_PAD.decode(&sealed).expect("valid base64").len();
        let nonce = 1 + KEY_ID_LEN + 3;
        let ciphertext = HEADER_LEN + 2;
        let tag = len - 1;
        for i in [nonce, ciphertext, tag] {
            assert_eq!(sealer.open(BINDING, &flip(&sealed, i)), Err(StateError::Invalid));
        }
        // Truncation and extension.
        let raw = URL_SAFE_NO_PAD.decode(&sealed).expect("valid base64");
        let short = URL_SAFE_NO_PAD.encode(&raw[..raw.len() - 1]);
        assert_eq!(sealer.open(BINDING, &short), Err(StateError::Invalid));
        let mut long = raw.clone();
        long.push(0);
        let long = URL_SAFE_NO_PAD.encode(long);
        assert_eq!(sealer.open(BINDING, &long), Err(StateError::Invalid));
        // Non-canonical base64 (padding) is refused rather than normalised.
        assert_eq!(sealer.open(BINDING, &format!("{sealed}=")), Err(StateError::Malformed));
    }

    #[test]
    fn wrong_binding_is_refused() {
        let sealer = StateSealer::random();
        let sealed = sealer.seal(BINDING, b"p");
        assert_eq!(sealer.open(b"", &sealed), Err(StateError::Invalid));
        assert_eq!(sealer.open(b"tools/call\0weather\0{\"city\":\"Pari\"}", &sealed), Err(StateError::Invalid));
    }

    #[test]
    fn request_binding_distinguishes_requests() {
        let args = serde_json::json!({"b": 1, "a": [true, null, "x"]});
        let reordered: serde_json::Value = serde_json::from_str(r#"{"a":[true,null,"x"],"b":1}"#).expect("json");
        let changed = serde_json::json!({"b": 2, "a": [true, null, "x"]});
        let base = request_binding("tools/call", "t", Some(&args), Some("alice"));
        assert_eq!(base, request_binding("tools/call", "t", Some(&reordered), Some("alice")));
        let others = [
            request_binding("tools/call", "t", Some(&changed), Some("alice")),
            request_binding("tools/call", "t", Some(&args), Some("bob")),
            request_binding("tools/call", "t", Some(&args), None),
            request_binding("tools/call", "u", Some(&args), Some("alice")),
            request_binding("prompts/get", "t", Some(&args), Some("alice")),
            request_binding("tools/call", "t", None, Some("alice")),
            // Shifting bytes between fields must not collide.
            request_binding("tools/callt", "", Some(&args), Some("alice")),
        ];
        let sealer = StateSealer::random();
        let sealed = sealer.seal(&base, b"p");
        assert_eq!(sealer.open(&base, &sealed), Ok(b"p".to_vec()));
        for other in &others {
            assert_ne!(&base, other);
            assert_eq!(sealer.open(other, &sealed), Err(StateError::Invalid));
        }
    }

    #[test]
    fn foreign_key_with_same_id_is_refused() {
        let ours = StateSealer::new(SealingKey::generate(0));
        let theirs = StateSealer::new(SealingKey::generate(0));
        let sealed = theirs.seal(BINDING, b"p");
        assert_eq!(ours.open(BINDING, &sealed), Err(StateError::Invalid));
    }

    #[test]
    fn expiry() {
        let sealer = StateSealer::random().with_ttl(Duration::from_secs(60));
        let sealed = sealer.seal_at(BINDING, b"p", t0());
        let at = |secs| t0() + Duration::from_secs(secs);
        assert_eq!(sealer.open_at(BINDING, &sealed, at(0)), Ok(b"p".to_vec()));
        assert_eq!(sealer.open_at(BINDING, &sealed, at(59)), Ok(b"p".to_vec()));
        assert_eq!(sealer.open_at(BINDING, &sealed, at(60)), Err(StateError::Expired));
        assert_eq!(sealer.open_at(BINDING, &sealed, at(86_400)), Err(StateError::Expired));
        // Authentication comes before expiry: a stale forgery is Invalid.
        assert_eq!(sealer.open_at(b"other", &sealed, at(86_400)), Err(StateError::Invalid));
        // Default TTL is ten minutes.
        let sealer = StateSealer::random();
        assert_eq!(sealer.ttl(), DEFAULT_TTL);
        let sealed = sealer.seal_at(BINDING, b"p", t0());
        assert!(sealer.open_at(BINDING, &sealed, at(599)).is_ok());
        assert_eq!(sealer.open_at(BINDING, &sealed, at(600)), Err(StateError::Expired));
    }

    #[test]
    fn rotation() {
        let old = SealingKey::new(1, [1; 32]);
        let new = SealingKey::new(2, [2; 32]);
        let before = StateSealer::new(old.clone());
        let sealed_old = before.seal(BINDING, b"old");

        let during = StateSealer::new(new.clone()).with_previous_key(old.clone());
        assert_eq!(during.current_key_id(), 2);
        assert_eq!(during.open(BINDING, &sealed_old), Ok(b"old".to_vec()));
        let sealed_new = during.seal(BINDING, b"new");
        let raw = URL_SAFE_NO_PAD.decode(&sealed_new).expect("valid base64");
        assert_eq!(&raw[1..5], &2u32.to_be_bytes(), "sealed with the new key");
        // The old-key-only sealer cannot open states sealed with the new key.
        assert_eq!(before.open(BINDING, &sealed_new), Err(StateError::UnknownKey));

        // `rotate` is the same thing.
        let rotated = before.clone().rotate(new.clone());
        assert_eq!(rotated.open(BINDING, &sealed_old), Ok(b"old".to_vec()));
        assert_eq!(rotated.open(BINDING, &sealed_new), Ok(b"new".to_vec()));

        // Once the old key is dropped, its states are refused.
        let after = StateSealer::new(new.clone());
        assert_eq!(after.open(BINDING, &sealed_old), Err(StateError::UnknownKey));
        assert_eq!(rotated.without_previous_keys().open(BINDING, &sealed_old), Err(StateError::UnknownKey));
        assert_eq!(after.open(BINDING, &sealed_new), Ok(b"new".to_vec()));
        // Modifying a clone does not affect the original.
        assert_eq!(during.open(BINDING, &sealed_old), Ok(b"old".to_vec()));
    }

    #[test]
    fn same_id_previous_key_is_tried() {
        let a = SealingKey::new(0, [1; 32]);
        let b = SealingKey::new(0, [2; 32]);
        let sealed = StateSealer::new(a.clone()).seal(BINDING, b"p");
        let sealer = StateSealer::new(b).with_previous_key(a);
        assert_eq!(sealer.open(BINDING, &sealed), Ok(b"p".to_vec()));
    }

    #[test]
    fn garbage_is_malformed() {
        let sealer = StateSealer::new(SealingKey::new(0, [3; 32]));
        for input in ["", "A", "AA", "!!!!", "not base64 at all", "AQAAAAA", "====", "\u{1F600}"] {
            assert_eq!(sealer.open(BINDING, input), Err(StateError::Malformed), "{input:?}");
        }
        // Exactly the header: too short.
        let header = URL_SAFE_NO_PAD.encode([STATE_VERSION; HEADER_LEN]);
        assert_eq!(sealer.open(BINDING, &header), Err(StateError::Malformed));
        // Unknown version.
        let mut raw = vec![0u8; OVERHEAD + 4];
        raw[0] = 2;
        assert_eq!(sealer.open(BINDING, &URL_SAFE_NO_PAD.encode(&raw)), Err(StateError::Malformed));
        // Right version and key id, random body: fails authentication.
        raw[0] = STATE_VERSION;
        assert_eq!(sealer.open(BINDING, &URL_SAFE_NO_PAD.encode(&raw)), Err(StateError::Invalid));
        // Huge inputs are refused without decoding.
        let huge = "A".repeat(MAX_SEALED_LEN + 1);
        assert_eq!(sealer.open(BINDING, &huge), Err(StateError::Malformed));
    }

    #[test]
    fn random_inputs_never_open() {
        let sealer = StateSealer::new(SealingKey::new(0, [4; 32]));
        let mut rng = rand::rng();
        for _ in 0..2000 {
            let len = (rng.next_u32() % 200) as usize;
            let mut bytes = vec![0u8; len];
            rng.fill_bytes(&mut bytes);
            // Arbitrary (lossy) text.
            let text = String::from_utf8_lossy(&bytes);
            assert!(sealer.open(BINDING, &text).is_err());
            // Well-formed base64 of random bytes, sometimes with a valid prefix.
            if len > 5 && rng.next_u32().is_multiple_of(2) {
                bytes[0] = STATE_VERSION;
                bytes[1..5].copy_from_slice(&0u32.to_be_bytes());
            }
            assert!(sealer.open(BINDING, &URL_SAFE_NO_PAD.encode(&bytes)).is_err());
        }
    }

    #[test]
    fn max_payload_fits() {
        let sealer = StateSealer::random();
        let payload = vec![0x5a; MAX_PAYLOAD_LEN];
        let sealed = sealer.seal(BINDING, &payload);
        assert!(sealed.len() <= MAX_SEALED_LEN);
        assert_eq!(sealer.open(BINDING, &sealed), Ok(payload));
    }

    #[test]
    fn debug_hides_key_bytes() {
        let key = SealingKey::new(42, [0xAB; 32]);
        let shown = format!("{key:?}");
        assert!(shown.contains("42"));
        assert!(!shown.to_lowercase().contains("ab"), "{shown}");
        assert!(!shown.contains("171"), "{shown}");
        let sealer = StateSealer::new(key).with_previous_key(SealingKey::new(7, [0xAB; 32]));
        let shown = format!("{sealer:?}");
        assert!(!shown.contains("171") && !shown.contains("AB"), "{shown}");
    }
}
