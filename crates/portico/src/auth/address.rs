//! Which network addresses the OAuth client may reach (SSRF).
//!
//! Discovery follows URLs that the MCP server hands out: `resource_metadata` in its challenge,
//! the authorization servers its metadata names, and the endpoints theirs name. A malicious
//! server can point them anywhere, such as a cloud metadata service at `169.254.169.254` or an
//! admin port on the user's network. Every address the OAuth client connects to is checked:
//!
//! - a hostname is checked by the client's resolver, at connection time, so a DNS answer that
//!   changes between a check and the connection (rebinding) is checked too;
//! - a URL with a literal IP address is checked before the request is sent.
//!
//! The client's own `reqwest::Client` (given with
//! [`http_client`](super::OAuthClientBuilder::http_client)) has its own resolver: hostnames are
//! then checked once, before the request, and rebinding is not caught.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use reqwest::Url;

use super::AuthError;

/// Which addresses the OAuth client may connect to while it discovers and authorizes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddressPolicy {
    /// Public addresses always; loopback and private-network addresses only while
    /// authorizing for an MCP server that is itself on one (a local development setup).
    /// Link-local (cloud metadata services), unspecified and multicast addresses never.
    #[default]
    MatchServer,
    /// Public addresses only, whatever the MCP server's address.
    PublicOnly,
    /// Any address (a trusted network; tests).
    Any,
}

/// What kind of address an IP is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Public = 1,
    Loopback = 2,
    Private = 4,
    /// Link-local, unspecified, multicast, broadcast, `0.0.0.0/8`: never reached.
    Forbidden = 8,
}

impl Class {
    fn describe(self) -> &'static str {
        match self {
            Class::Public => "public",
            Class::Loopback => "loopback",
            Class::Private => "private-network",
            Class::Forbidden => "link-local, unspecified or multicast",
        }
    }
}

/// The class of `ip` (an IPv4-mapped IPv6 address counts as its IPv4 address).
pub(crate) fn classify(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> Class {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Class::Loopback
    } else if ip.is_link_local() || ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() || a == 0 {
        Class::Forbidden
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        // RFC 1918 and the shared address space of carrier-grade NAT (RFC 6598).
        Class::Private
    } else {
        Class::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> Class {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Class::Loopback
    } else if ip.is_unspecified() || ip.is_multicast() || (first & 0xffc0) == 0xfe80 {
        Class::Forbidden
    } else if (first & 0xfe00) == 0xfc00 {
        // Unique local addresses (RFC 4193).
        Class::Private
    } else {
        Class::Public
    }
}

/// The classes allowed now, shared by the resolver and the flow. The flow holds the client's
/// state lock while it sets them and makes its requests, so one OAuth client's flows never
/// see each other's settings.
#[derive(Debug)]
pub(crate) struct Guard {
    policy: AddressPolicy,
    allowed: AtomicU8,
}

impl Guard {
    pub(crate) fn new(policy: AddressPolicy) -> Arc<Self> {
        Arc::new(Guard { policy, allowed: AtomicU8::new(Class::Public as u8) })
    }

    fn allows(&self, class: Class) -> bool {
        self.policy == AddressPolicy::Any || self.allowed.load(Ordering::Acquire) & class as u8 != 0
    }

    /// Sets what may be reached while working for the MCP server at `server`.
    pub(crate) async fn enter(&self, server: &Url) {
        let mut allowed = Class::Public as u8;
        if self.policy == AddressPolicy::MatchServer {
            let local = server_classes(server).await.into_iter().any(|c| matches!(c, Class::Loopback | Class::Private));
            if local {
                allowed |= Class::Loopback as u8 | Class::Private as u8;
            }
        }
        self.allowed.store(allowed, Ordering::Release);
    }

    /// Also allows loopback and private networks (for a configured endpoint) until
    /// [`restore`](Self::restore); returns what was allowed before.
    pub(crate) fn allow_local(&self) -> u8 {
        self.allowed.fetch_or(Class::Loopback as u8 | Class::Private as u8, Ordering::AcqRel)
    }

    /// Puts back what [`allow_local`](Self::allow_local) returned.
    pub(crate) fn restore(&self, allowed: u8) {
        self.allowed.store(allowed, Ordering::Release);
    }

    /// Refuses `url` when its host is a literal IP address of a class not allowed now; with
    /// `resolve`, a hostname is resolved and every address checked too (for a caller's own
    /// HTTP client, whose resolver is not ours).
    pub(crate) async fn check(&self, url: &Url, resolve: bool) -> Result<(), AuthError> {
        if self.policy == AddressPolicy::Any {
            return Ok(());
        }
        let Some(host) = url.host_str() else {
            return Err(AuthError::Config(format!("{url} has no host")));
        };
        let ips: Vec<IpAddr> = match literal_ip(host) {
            Some(ip) => vec![ip],
            None if resolve => {
                let port = url.port_or_known_default().unwrap_or(443);
                match tokio::net::lookup_host((host, port)).await {
                    Ok(found) => found.map(|a| a.ip()).collect(),
                    Err(_) => return Ok(()), // the request fails on its own, with its own error
                }
            }
            None => return Ok(()),
        };
        for ip in ips {
            let class = classify(ip);
            if !self.allows(class) {
                return Err(refused(url.host_str().unwrap_or_default(), class));
            }
        }
        Ok(())
    }
}

fn refused(host: &str, class: Class) -> AuthError {
    AuthError::AddressRefused { host: host.to_owned(), kind: class.describe() }
}

/// The classes of the MCP server's addresses (`localhost` without asking the resolver).
async fn server_classes(server: &Url) -> Vec<Class> {
    let Some(host) = server.host_str() else { return Vec::new() };
    if let Some(ip) = literal_ip(host) {
        return vec![classify(ip)];
    }
    if host.eq_ignore_ascii_case("localhost") {
        return vec![Class::Loopback];
    }
    let port = server.port_or_known_default().unwrap_or(443);
    match tokio::net::lookup_host((host, port)).await {
        Ok(found) => found.map(|a| classify(a.ip())).collect(),
        Err(_) => Vec::new(),
    }
}

/// A URL host that is an IP address (IPv6 in brackets, as URLs write it).
fn literal_ip(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// The OAuth client's resolver: the system's, with the addresses the guard does not allow
/// removed (an error when none is left).
#[derive(Debug, Clone)]
pub(crate) struct GuardedResolver(pub(crate) Arc<Guard>);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused_class = None;
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| {
                    let class = classify(a.ip());
                    let ok = guard.allows(class);
                    if !ok {
                        refused_class = Some(class);
                    }
                    ok
                })
                .collect();
            if kept.is_empty()
                && let Some(class) = refused_class
            {
                return Err(Box::new(refused(&host, class)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Class {
        classify(s.parse().expect("ip"))
    }

    #[test]
    fn classes() {
        assert_eq!(class("127.0.0.1"), Class::Loopback);
        assert_eq!(class("::1"), Class::Loopback);
        assert_eq!(class("10.1.2.3"), Class::Private);
        assert_eq!(class("172.16.0.1"), Class::Private);
        assert_eq!(class("172.32.0.1"), Class::Public);
        assert_eq!(class("192.168.1.1"), Class::Private);
        assert_eq!(class("100.64.0.1"), Class::Private);
        assert_eq!(class("100.128.0.1"), Class::Public);
        assert_eq!(class("fd00::1"), Class::Private);
        assert_eq!(class("169.254.169.254"), Class::Forbidden);
        assert_eq!(class("::ffff:169.254.169.254"), Class::Forbidden);
        assert_eq!(class("::ffff:10.0.0.1"), Class::Private);
        assert_eq!(class("fe80::1"), Class::Forbidden);
        assert_eq!(class("0.0.0.0"), Class::Forbidden);
        assert_eq!(class("0.1.2.3"), Class::Forbidden);
        assert_eq!(class("::"), Class::Forbidden);
        assert_eq!(class("224.0.0.1"), Class::Forbidden);
        assert_eq!(class("8.8.8.8"), Class::Public);
        assert_eq!(class("2606:4700::1111"), Class::Public);
    }

    #[tokio::test]
    async fn the_guard_follows_the_server() {
        let url = |s: &str| Url::parse(s).expect("url");
        let guard = Guard::new(AddressPolicy::MatchServer);
        guard.enter(&url("https://93.184.215.14/mcp")).await;
        assert!(guard.check(&url("http://127.0.0.1:9/x"), false).await.is_err(), "public server: no loopback");
        assert!(guard.check(&url("http://10.0.0.5/x"), false).await.is_err(), "public server: no private");
        assert!(guard.check(&url("https://93.184.215.15/x"), false).await.is_ok());
        guard.enter(&url("http://127.0.0.1:8080/mcp")).await;
        assert!(guard.check(&url("http://127.0.0.1:9/x"), false).await.is_ok(), "local server: loopback");
        assert!(guard.check(&url("http://[::1]:9/x"), false).await.is_ok());
        let err = guard.check(&url("http://169.254.169.254/latest/meta-data"), false).await;
        assert!(matches!(err, Err(AuthError::AddressRefused { .. })), "metadata service: never");
        guard.enter(&url("http://localhost:8080/mcp")).await;
        assert!(guard.check(&url("http://192.168.0.2/x"), false).await.is_ok());

        let public = Guard::new(AddressPolicy::PublicOnly);
        public.enter(&url("http://127.0.0.1:8080/mcp")).await;
        assert!(public.check(&url("http://127.0.0.1:9/x"), false).await.is_err());

        let any = Guard::new(AddressPolicy::Any);
        assert!(any.check(&url("http://169.254.169.254/"), false).await.is_ok());
    }
}
