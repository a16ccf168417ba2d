//! Protocol revisions and the pure rules that relate them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A revision of the Model Context Protocol.
///
/// Ordered by date, so `v >= ProtocolVersion::V2025_06_18` reads "2025-06-18 or later".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2024-11-05: the first revision (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, OAuth, batching, tool annotations, audio.
    V2025_03_26,
    /// 2025-06-18: structured tool output, elicitation, resource links; batching removed.
    V2025_06_18,
    /// 2025-11-25: icons, URL elicitation, tools in sampling; the last handshake revision.
    V2025_11_25,
    /// 2026-07-28: the stateless revision (no `initialize`, per-request `_meta`).
    V2026_07_28,
}

/// Every revision Portico speaks, oldest first.
pub const ALL_VERSIONS: [ProtocolVersion; 5] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
    ProtocolVersion::V2026_07_28,
];

/// The revisions negotiated with `initialize`, oldest first.
pub const HANDSHAKE_VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
];

/// The revisions carried per request in `_meta` (no handshake).
pub const STATELESS_VERSIONS: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

impl ProtocolVersion {
    /// The newest revision.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;
    /// The newest handshake-era revision.
    pub const LATEST_HANDSHAKE: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The wire string, e.g. `"2025-11-25"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire string; `None` for a revision Portico does not know.
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        ALL_VERSIONS.iter().copied().find(|v| v.as_str() == s)
    }

    /// True for the stateless era (2026-07-28 and later): no handshake, `_meta` on every request.
    pub const fn is_stateless(self) -> bool {
        matches!(self, ProtocolVersion::V2026_07_28)
    }

    /// True when JSON-RPC batches must be accepted (2025-03-26 only).
    pub const fn receives_batches(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// True when a missing resource is `-32602` rather than `-32002`.
    pub const fn resource_not_found_is_invalid_params(self) -> bool {
        self.is_stateless()
    }

    /// True when invalid tool input is a tool execution error (`isError`), not a protocol error.
    pub const fn tool_input_errors_are_results(self) -> bool {
        matches!(self, ProtocolVersion::V2025_11_25 | ProtocolVersion::V2026_07_28)
    }

    /// True when tool results may carry `structuredContent` and tools `outputSchema`.
    pub const fn has_structured_output(self) -> bool {
        !matches!(self, ProtocolVersion::V2024_11_05 | ProtocolVersion::V2025_03_26)
    }

    /// True when `elicitation/create` exists (2025-06-18 and later).
    pub const fn has_elicitation(self) -> bool {
        !matches!(self, ProtocolVersion::V2024_11_05 | ProtocolVersion::V2025_03_26)
    }

    /// True when URL-mode elicitation and tools in sampling exist (2025-11-25 and later).
    pub const fn has_url_elicitation_and_sampling_tools(self) -> bool {
        matches!(self, ProtocolVersion::V2025_11_25 | ProtocolVersion::V2026_07_28)
    }

    /// The version a handshake-era server answers to `initialize` with `requested`:
    /// the same version when supported, otherwise the latest handshake revision.
    pub fn negotiate_handshake(requested: &str) -> ProtocolVersion {
        match ProtocolVersion::parse(requested) {
            Some(v) if !v.is_stateless() => v,
            _ => ProtocolVersion::LATEST_HANDSHAKE,
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<ProtocolVersion> for String {
    fn from(v: ProtocolVersion) -> String {
        v.as_str().to_owned()
    }
}

/// The error of parsing an unknown revision string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVersion(pub String);

impl fmt::Display for UnknownVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown protocol version {:?}", self.0)
    }
}

impl std::error::Error for UnknownVersion {}

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::parse(s).ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        ProtocolVersion::parse(&s).ok_or_else(|| serde::de::Error::custom(UnknownVersion(s.into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_and_order_by_date() {
        for v in ALL_VERSIONS {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert!(ProtocolVersion::V2025_06_18 > ProtocolVersion::V2025_03_26);
        assert_eq!(ProtocolVersion::parse("2099-01-01"), None);
    }

    #[test]
    fn handshake_negotiation_echoes_known_and_counters_unknown() {
        assert_eq!(ProtocolVersion::negotiate_handshake("2025-03-26"), ProtocolVersion::V2025_03_26);
        assert_eq!(ProtocolVersion::negotiate_handshake("2024-11-05"), ProtocolVersion::V2024_11_05);
        assert_eq!(ProtocolVersion::negotiate_handshake("1999-01-01"), ProtocolVersion::V2025_11_25);
        // The stateless revision is never negotiated through `initialize`.
        assert_eq!(ProtocolVersion::negotiate_handshake("2026-07-28"), ProtocolVersion::V2025_11_25);
    }
}
