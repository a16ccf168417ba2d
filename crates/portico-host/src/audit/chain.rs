//! Tamper evidence: the hash chain, signed checkpoints, the keys in the state directory, ids.
//!
//! - Each record's hash is `SHA-256(previous hash ‖ canonical JSON)`; the first record's
//!   previous hash is 32 zero bytes.
//! - Every N records (and every interval while records arrive, and when the log closes) the
//!   writer signs a checkpoint: `{seq, hash, time, prev_signature, key}` as canonical JSON,
//!   Ed25519 over it. Each checkpoint names the previous one's signature (as AWS CloudTrail's
//!   digests do), so a checkpoint cannot be dropped from the middle unnoticed.
//! - The keys are files in the state directory, created with mode 0600:
//!   `audit-hmac.key` (redaction) and `audit-signing.key` (checkpoints); the public half is
//!   written beside them as `audit-signing.pub` for anyone who verifies elsewhere.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::AuditError;
use super::record::canonical_json;
use super::time;

/// The previous hash of the first record.
pub(crate) const GENESIS: [u8; 32] = [0; 32];

/// File names in the state directory.
pub(crate) const HMAC_KEY_FILE: &str = "audit-hmac.key";
pub(crate) const SIGNING_KEY_FILE: &str = "audit-signing.key";
pub(crate) const PUBLIC_KEY_FILE: &str = "audit-signing.pub";

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// The bytes of hex text.
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// The 32 bytes of hex text.
pub(crate) fn unhex32(s: &str) -> Option<[u8; 32]> {
    unhex(s)?.try_into().ok()
}

/// The next link: `SHA-256(prev ‖ text)`.
pub(crate) fn link(prev: &[u8; 32], text: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(text.as_bytes());
    h.finalize().into()
}

/// Crockford's base 32, as ULIDs are written.
const ULID_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// The low bits of a record's ULID that hold its `seq`.
const ULID_SEQ_BITS: u32 = 40;

/// A new ULID for the record `seq` made at `ms` (milliseconds since the epoch), in Crockford's
/// base 32: 48 bits of time, then 80 bits that are random in other ULIDs. Here 40 of them are
/// random and the last 40 are the record's `seq` (modulo 2^40), so the record is found by its
/// `seq` from its id ([`ulid_seq`]) and the log needs no index of ids.
pub(crate) fn ulid(ms: u64, seq: u64) -> String {
    let random: u128 = rand::random::<u128>() & ((1u128 << (80 - ULID_SEQ_BITS)) - 1);
    let seq = u128::from(seq) & ((1u128 << ULID_SEQ_BITS) - 1);
    let v = (u128::from(ms & 0xFFFF_FFFF_FFFF) << 80) | (random << ULID_SEQ_BITS) | seq;
    (0..26).map(|i| char::from(ULID_ALPHABET[((v >> (125 - 5 * i)) & 31) as usize])).collect()
}

/// The `seq` (modulo 2^40) a record's ULID carries if [`ulid`] made it; `None` for text that
/// is not a ULID. An id made otherwise (by a log older than this scheme) gives some number, so
/// the record found by it is compared by its id.
pub(crate) fn ulid_seq(id: &str) -> Option<u64> {
    if id.len() != 26 {
        return None;
    }
    let mut v: u128 = 0;
    for b in id.bytes() {
        let digit = ULID_ALPHABET.iter().position(|&a| a == b.to_ascii_uppercase())?;
        v = (v << 5) | digit as u128;
    }
    u64::try_from(v & ((1u128 << ULID_SEQ_BITS) - 1)).ok()
}

/// Reads a 32-byte key (hex) from `path`; `None` when the file does not exist.
pub(crate) fn read_key(path: &Path) -> Result<Option<[u8; 32]>, AuditError> {
    match fs::read_to_string(path) {
        Ok(text) => unhex32(&text)
            .map(Some)
            .ok_or_else(|| AuditError::Key(format!("{}: not a key (64 hex digits)", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(AuditError::Key(format!("{}: {e}", path.display()))),
    }
}

/// The key at `path`, made (random, mode 0600) when there is none yet.
pub(crate) fn load_or_create_key(path: &Path) -> Result<[u8; 32], AuditError> {
    if let Some(key) = read_key(path)? {
        if let Ok(meta) = fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(path = %path.display(), "the audit key can be read by others; chmod 600 it");
        }
        return Ok(key);
    }
    let key: [u8; 32] = rand::random();
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| AuditError::Key(format!("{}: cannot create: {e}", path.display())))?;
    file.write_all(format!("{}\n", hex(&key)).as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| AuditError::Key(format!("{}: cannot write: {e}", path.display())))?;
    Ok(key)
}

/// A signed checkpoint: the chain's hash at `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub seq: u64,
    pub hash: [u8; 32],
    /// RFC 3339, when it was signed.
    pub time: String,
    pub prev_signature: Option<Vec<u8>>,
    pub signature: Vec<u8>,
    /// The Ed25519 public key that signed it.
    pub key: [u8; 32],
}

impl Checkpoint {
    /// What is signed: the checkpoint as canonical JSON.
    pub fn message(seq: u64, hash: &[u8; 32], time: &str, prev_signature: Option<&[u8]>, key: &[u8; 32]) -> String {
        canonical_json(&json!({
            "seq": seq,
            "hash": hex(hash),
            "time": time,
            "prev_signature": prev_signature.map(hex),
            "key": hex(key),
        }))
    }

    /// Whether the signature is the key's over the message.
    pub fn signature_ok(&self) -> bool {
        let Ok(key) = VerifyingKey::from_bytes(&self.key) else { return false };
        let Ok(sig) = Signature::from_slice(&self.signature) else { return false };
        let msg = Checkpoint::message(self.seq, &self.hash, &self.time, self.prev_signature.as_deref(), &self.key);
        key.verify(msg.as_bytes(), &sig).is_ok()
    }
}

/// A signed statement that the records up to `through` were removed on purpose (retention),
/// after the checkpoint at `through`, whose hash it names: `verify` expects the log to start
/// right after it, and reports records missing before that point otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PruneStatement {
    pub through: u64,
    pub hash: [u8; 32],
    pub time: String,
    pub signature: Vec<u8>,
    pub key: [u8; 32],
}

impl PruneStatement {
    fn message(through: u64, hash: &[u8; 32], time: &str, key: &[u8; 32]) -> String {
        canonical_json(&json!({ "pruned_through": through, "hash": hex(hash), "time": time, "key": hex(key) }))
    }

    /// Whether the signature is the key's over the statement.
    pub fn signature_ok(&self) -> bool {
        let Ok(key) = VerifyingKey::from_bytes(&self.key) else { return false };
        let Ok(sig) = Signature::from_slice(&self.signature) else { return false };
        key.verify(PruneStatement::message(self.through, &self.hash, &self.time, &self.key).as_bytes(), &sig).is_ok()
    }
}

/// Signs checkpoints.
#[derive(Clone)]
pub(crate) struct Signer {
    key: SigningKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("public", &hex(&self.public())).finish()
    }
}

impl Signer {
    /// The signer whose secret is `seed`.
    pub fn new(seed: &[u8; 32]) -> Signer {
        Signer { key: SigningKey::from_bytes(seed) }
    }

    /// Its public key.
    pub fn public(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// A checkpoint at `seq`, whose record hash is `hash`, after the one signed `prev`.
    pub fn checkpoint(&self, seq: u64, hash: [u8; 32], prev: Option<&[u8]>) -> Checkpoint {
        let time = time::format_micros(time::now_micros());
        let key = self.public();
        let msg = Checkpoint::message(seq, &hash, &time, prev, &key);
        let signature = self.key.sign(msg.as_bytes()).to_bytes().to_vec();
        Checkpoint { seq, hash, time, prev_signature: prev.map(<[u8]>::to_vec), signature, key }
    }
}

impl Signer {
    /// A statement that the records through the checkpoint at `through` (hash `hash`) go.
    pub fn prune_statement(&self, through: u64, hash: [u8; 32]) -> PruneStatement {
        let time = time::format_micros(time::now_micros());
        let key = self.public();
        let msg = PruneStatement::message(through, &hash, &time, &key);
        PruneStatement { through, hash, time, signature: self.key.sign(msg.as_bytes()).to_bytes().to_vec(), key }
    }
}

/// Writes the public key beside the signing key (readable by all: it is public).
pub(crate) fn write_public_key(path: &Path, key: &[u8; 32]) {
    let text = format!("{}\n", hex(key));
    if fs::read_to_string(path).ok().as_deref() != Some(text.as_str())
        && let Err(e) = fs::write(path, text)
    {
        tracing::warn!(path = %path.display(), "cannot write the audit public key: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulids_are_26_crockford_characters_in_time_order_and_carry_their_seq() {
        let a = ulid(1_700_000_000_000, 7);
        let b = ulid(1_700_000_000_001, 1);
        assert_eq!(ulid_seq(&a), Some(7));
        assert_eq!(ulid_seq(&b.to_lowercase()), Some(1));
        assert_eq!(ulid_seq(&ulid(1_700_000_000_000, (1 << 40) - 1)), Some((1 << 40) - 1));
        assert_eq!(ulid_seq(&ulid(1_700_000_000_000, 1 << 40)), Some(0));
        assert_eq!(ulid_seq("01ZZZ"), None);
        assert_eq!(ulid_seq("01HF0000000000000000000U00"), None, "U is not in the alphabet");
        assert_eq!(a.len(), 26);
        assert!(a < b);
        assert!(a.starts_with("01HF"), "{a}");
    }

    #[test]
    fn checkpoints_sign_and_verify() {
        let s = Signer::new(&[3; 32]);
        let mut cp = s.checkpoint(10, [1; 32], None);
        assert!(cp.signature_ok());
        cp.hash[0] ^= 1;
        assert!(!cp.signature_ok());
        assert_eq!(unhex(&hex(&[0, 255, 16])), Some(vec![0, 255, 16]));
    }
}
