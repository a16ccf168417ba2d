//! DNS-rebinding protection: `Host` and `Origin` must name an allowed host.

use http::HeaderValue;

/// Which hosts may be named by `Host` and `Origin`.
#[derive(Debug, Clone)]
pub(crate) struct HostPolicy {
    /// Allowed host names (without port), lower case. Empty = any (not recommended).
    pub hosts: Vec<String>,
    /// Allowed origins (`scheme://host[:port]`), lower case, in addition to any origin whose host
    /// is allowed.
    pub origins: Vec<String>,
}

impl HostPolicy {
    /// Loopback names only: the safe default for a local server.
    pub(crate) fn localhost() -> Self {
        HostPolicy { hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()], origins: Vec::new() }
    }

    /// Whether `host` (as [`host_of`] cut it) is allowed; host names compare case-insensitively.
    fn host_allowed(&self, host: &str) -> bool {
        self.hosts.is_empty() || self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }
}

/// The host part of `host[:port]` (brackets kept for IPv6), borrowed: no allocation per request.
fn host_of(authority: &str) -> &str {
    let a = authority.trim();
    if a.starts_with('[') {
        return match a.find(']') {
            Some(end) => &a[..=end],
            None => a,
        };
    }
    match a.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|c| c.is_ascii_digit()) => h,
        _ => a,
    }
}

/// Why a request is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    Host,
    Origin,
}

/// Checks `Host` (always) and `Origin` (when present; browsers send it): the first value of
/// each.
pub(crate) fn check(
    policy: &HostPolicy,
    host: Option<&HeaderValue>,
    origin: Option<&HeaderValue>,
) -> Result<(), Refused> {
    let host = host.and_then(|h| h.to_str().ok()).ok_or(Refused::Host)?;
    if !policy.host_allowed(host_of(host)) {
        return Err(Refused::Host);
    }
    if let Some(origin) = origin {
        let origin = origin.to_str().map_err(|_| Refused::Origin)?.trim().to_ascii_lowercase();
        if policy.origins.contains(&origin) {
            return Ok(());
        }
        let Some((scheme, rest)) = origin.split_once("://") else { return Err(Refused::Origin) };
        if !matches!(scheme, "http" | "https") || !policy.host_allowed(host_of(rest)) {
            return Err(Refused::Origin);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderMap;
    use http::header::{HOST, ORIGIN};

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(HOST, HeaderValue::from_str(host).expect("host"));
        if let Some(o) = origin {
            h.insert(ORIGIN, HeaderValue::from_str(o).expect("origin"));
        }
        h
    }

    fn check(p: &HostPolicy, h: &HeaderMap) -> Result<(), Refused> {
        super::check(p, h.get(HOST), h.get(ORIGIN))
    }

    #[test]
    fn loopback_is_allowed_and_everything_else_refused() {
        let p = HostPolicy::localhost();
        for ok in ["localhost:8080", "127.0.0.1:3000", "[::1]:80", "LOCALHOST", "LocalHost:80", " [::1] "] {
            assert_eq!(check(&p, &headers(ok, None)), Ok(()), "{ok}");
        }
        assert_eq!(check(&p, &headers("localhost:1", Some("http://localhost:5173"))), Ok(()));
        assert_eq!(check(&p, &headers("evil.example", None)), Err(Refused::Host));
        assert_eq!(check(&p, &headers("localhost.evil.example:80", None)), Err(Refused::Host));
        assert_eq!(check(&p, &headers("localhost:1", Some("http://evil.example"))), Err(Refused::Origin));
        assert_eq!(check(&p, &headers("localhost:1", Some("null"))), Err(Refused::Origin));
        assert_eq!(check(&p, &headers("localhost:1", Some("file://localhost"))), Err(Refused::Origin));
        assert_eq!(check(&p, &HeaderMap::new()), Err(Refused::Host));
    }

    #[test]
    fn explicit_origins_are_honoured() {
        let p = HostPolicy { hosts: vec!["api.example.com".into()], origins: vec!["https://app.example.com".into()] };
        assert_eq!(check(&p, &headers("api.example.com", Some("https://app.example.com"))), Ok(()));
        assert_eq!(check(&p, &headers("api.example.com", Some("https://other.example.com"))), Err(Refused::Origin));
    }
}
