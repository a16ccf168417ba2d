//! MCP authorization (OAuth 2.1 over the HTTP transports), both sides.
//!
//! - [`server`] (feature `auth-server`): the resource server — bearer tokens checked in front of
//!   a Streamable HTTP endpoint, the protected-resource metadata document, and the validated
//!   principal ([`server::AuthInfo`]) handed to handlers.
//! - The client (feature `auth-client`), below.
//!
//! # The client
//!
//! An [`OAuthClient`] given to
//! [`HttpClientTransport::auth`](crate::transport::http::client::HttpClientTransport::auth)
//! puts `Authorization: Bearer …` on every HTTP request (never in a URL). When the server
//! answers `401`, it runs the flow and the request is sent again; when it answers `403` with
//! `insufficient_scope`, it re-authorizes with the union of the scopes held and the scopes
//! asked for (step-up), up to a limit of attempts per request.
//!
//! ```no_run
//! use portico::auth::{LoopbackRedirect, OAuthClient, FileTokenStore};
//! use portico::client::Client;
//! use portico::schema::Implementation;
//! use portico::transport::http::client::HttpClientTransport;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let redirect = LoopbackRedirect::bind(0, |url| eprintln!("Open this URL to sign in: {url}")).await?;
//! let oauth = OAuthClient::builder()
//!     .client_name("my-host")
//!     .redirect(redirect)
//!     .token_store(FileTokenStore::new("tokens.json"))
//!     .build()?;
//! let transport = HttpClientTransport::new("https://mcp.example.com/mcp").auth(oauth);
//! let client = Client::builder(Implementation::new("my-host", "1.0.0")).connect(transport).await?;
//! # Ok(()) }
//! ```
//!
//! The flow, by the 2025-03-26 … 2026-07-28 revisions:
//!
//! 1. **Discovery.** Protected Resource Metadata (RFC 9728) from the challenge's
//!    `resource_metadata`, else the path-inserted then the root well-known URL. Its `resource`
//!    must be this server (same origin, same path or a parent of it) or the flow stops. Then
//!    the authorization server's metadata in the spec's order (RFC 8414 and OpenID Connect,
//!    path-inserted and appended); its `issuer` must be the issuer looked up. A server without
//!    Protected Resource Metadata is a 2025-03-26 server: its origin is the authorization
//!    server, and without metadata `/authorize`, `/token` and `/register` are used.
//! 2. **Registration**, in order: pre-registered credentials, a Client ID Metadata Document
//!    URL (when the server supports them), Dynamic Client Registration (with
//!    `application_type`), else [`AuthError::NotConfigured`]. Credentials are kept per issuer:
//!    a resource that moves to another authorization server gets a new registration.
//! 3. **Authorization code with PKCE `S256`** (refused when the server does not advertise it),
//!    `state` checked, RFC 9207 `iss` checked by exact string comparison, RFC 8707 `resource`
//!    in both requests. Scopes: the challenge's `scope`, else the resource's
//!    `scopes_supported`, else none; `offline_access` added only when the authorization server
//!    lists it. Or the **client credentials** grant ([`GrantType::ClientCredentials`]).
//! 4. **Tokens** are refreshed before they expire and on `401` (refresh tokens rotate), and
//!    kept in a [`TokenStore`]: [`MemoryTokenStore`] or [`FileTokenStore`] (mode `0600`).
//!    When the authorization server supports DPoP (RFC 9449) with `ES256`, tokens are bound
//!    to a key of this client and every request carries a fresh proof
//!    ([`OAuthClientBuilder::dpop`]).

#[cfg(feature = "auth-client")]
#[cfg(feature = "auth-client")]
mod address;
#[cfg(feature = "auth-client")]
mod error;
#[cfg(feature = "auth-client")]
mod flow;
#[cfg(feature = "auth-client")]
mod jwt;
#[cfg(feature = "auth-client")]
mod metadata;
mod redirect;
#[cfg(feature = "auth-client")]
mod store;
#[cfg(feature = "auth-client")]
mod token;

#[cfg(feature = "auth-client")]
use std::sync::Arc;

#[cfg(feature = "auth-client")]
#[cfg(feature = "auth-client")]
pub use address::AddressPolicy;
#[cfg(feature = "auth-client")]
pub use error::AuthError;
#[cfg(feature = "auth-client")]
pub use jwt::SigningKey;
#[cfg(feature = "auth-client")]
pub use metadata::{
    AuthorizationServerMetadata, BearerChallenge, ProtectedResourceMetadata, authorization_server_metadata_urls,
    canonical_resource, protected_resource_metadata_urls, resource_matches,
};
pub use redirect::{HeadlessRedirect, LoopbackRedirect, OpenUrl, RedirectHandler};
#[cfg(feature = "auth-client")]
pub use store::{ClientInfo, FileTokenStore, MemoryTokenStore, StoredAuth, TokenSet, TokenStore};

#[cfg(feature = "auth-client")]
pub(crate) use flow::Challenge;

/// True when a `WWW-Authenticate` value offers the `DPoP` scheme.
#[cfg(feature = "auth-client")]
pub(crate) fn offers_dpop(header: &str) -> bool {
    metadata::find_scheme(header, "dpop").is_some()
}

/// Which OAuth grant obtains the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
#[cfg(feature = "auth-client")]
pub enum GrantType {
    /// Authorization code with PKCE, through a [`RedirectHandler`] (a user signs in).
    #[default]
    AuthorizationCode,
    /// Client credentials (machine to machine): needs pre-registered credentials, with a
    /// secret or a [`SigningKey`].
    ClientCredentials,
    /// A JWT assertion as the grant (RFC 7523 §2.1): a workload identity token
    /// ([`OAuthClientBuilder::jwt_bearer`]), or an identity assertion obtained from an
    /// enterprise identity provider by token exchange
    /// ([`OAuthClientBuilder::enterprise_idp`]).
    JwtBearer,
}

/// An enterprise identity provider that exchanges the user's ID token for an identity
/// assertion authorization grant (ID-JAG, RFC 8693 token exchange), for the MCP server's
/// authorization server.
#[derive(Clone)]
#[non_exhaustive]
#[cfg(feature = "auth-client")]
pub struct EnterpriseIdp {
    /// The identity provider's token endpoint.
    pub token_endpoint: String,
    /// This client's `client_id` at the identity provider.
    pub client_id: String,
    /// The user's ID token from the identity provider.
    pub id_token: String,
}

#[cfg(feature = "auth-client")]
impl EnterpriseIdp {
    /// An identity provider at `token_endpoint`.
    pub fn new(token_endpoint: impl Into<String>, client_id: impl Into<String>, id_token: impl Into<String>) -> Self {
        EnterpriseIdp { token_endpoint: token_endpoint.into(), client_id: client_id.into(), id_token: id_token.into() }
    }
}

#[cfg(feature = "auth-client")]
impl std::fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Where the assertion of [`GrantType::JwtBearer`] comes from.
#[derive(Clone)]
#[cfg(feature = "auth-client")]
pub(crate) enum Assertion {
    Static(String),
    Enterprise(EnterpriseIdp),
}

/// The default number of authorizations one request may trigger before it fails.
#[cfg(feature = "auth-client")]
const DEFAULT_MAX_AUTHORIZATIONS: u32 = 3;

/// An OAuth 2.1 client for MCP servers; cheap to clone (clones share tokens).
///
/// Build it with [`OAuthClient::builder`] and give it to
/// [`HttpClientTransport::auth`](crate::transport::http::client::HttpClientTransport::auth).
#[derive(Clone)]
#[cfg(feature = "auth-client")]
pub struct OAuthClient {
    inner: Arc<Inner>,
}

#[cfg(feature = "auth-client")]
impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient").field("client_name", &self.inner.cfg.client_name).finish_non_exhaustive()
    }
}

#[cfg(feature = "auth-client")]
struct Inner {
    cfg: Config,
    /// Does not follow redirects: the authorization response is read from `Location`.
    http: reqwest::Client,
    /// What `http` may connect to (its resolver holds the same guard, unless the caller gave
    /// the client).
    guard: Arc<address::Guard>,
    /// The caller gave `http`: hostnames are resolved and checked before each request.
    own_http: bool,
    /// Held while tokens are read, refreshed or obtained: one flow at a time.
    state: tokio::sync::Mutex<flow::State>,
    /// The DPoP key, unless DPoP is turned off.
    dpop_key: Option<jwt::DpopKey>,
}

#[cfg(feature = "auth-client")]
struct Config {
    client_name: String,
    redirect: Arc<dyn RedirectHandler>,
    store: Arc<dyn TokenStore>,
    /// Pre-registered credentials, each for one issuer or (`None`) for any.
    credentials: Vec<(Option<String>, ClientInfo)>,
    signing_key: Option<Arc<SigningKey>>,
    metadata_url: Option<String>,
    grant: GrantType,
    assertion: Option<Assertion>,
    scope: Option<String>,
    offline_access: bool,
    max_authorizations: u32,
    application_type: String,
    dpop: bool,
}

#[cfg(feature = "auth-client")]
impl OAuthClient {
    /// A builder with the defaults: authorization code grant, [`HeadlessRedirect`],
    /// [`MemoryTokenStore`], Dynamic Client Registration as `native`, at most 3
    /// authorizations per request.
    pub fn builder() -> OAuthClientBuilder {
        OAuthClientBuilder {
            cfg: Config {
                client_name: "portico".into(),
                redirect: Arc::new(HeadlessRedirect::default()),
                store: Arc::new(MemoryTokenStore::new()),
                credentials: Vec::new(),
                signing_key: None,
                metadata_url: None,
                grant: GrantType::AuthorizationCode,
                assertion: None,
                scope: None,
                offline_access: true,
                max_authorizations: DEFAULT_MAX_AUTHORIZATIONS,
                application_type: "native".into(),
                dpop: true,
            },
            http: None,
            addresses: AddressPolicy::default(),
        }
    }

    /// The tokens currently held for the MCP server at `server_url`, if any (loaded from the
    /// store on first use).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn tokens(&self, server_url: &str) -> Option<TokenSet> {
        let server = reqwest::Url::parse(server_url).ok()?;
        let mut st = self.inner.state.lock().await;
        self.load(&mut st, &server);
        st.session.as_ref().map(|s| s.tokens.clone())
    }

    /// Authorizes against the MCP server at `server_url` now, without waiting for a `401`:
    /// discovery, registration and the grant.
    ///
    /// # Errors
    /// Whatever step fails, as an [`AuthError`].
    ///
    /// # Cancel safety
    /// Not cancel safe: a flow dropped midway leaves no tokens, but may leave a registration.
    pub async fn authorize(&self, server_url: &str) -> Result<(), AuthError> {
        let server = reqwest::Url::parse(server_url)
            .map_err(|e| AuthError::Config(format!("invalid MCP server URL {server_url:?}: {e}")))?;
        self.challenged(&server, Challenge { status: 401, bearer: None, sent: None, attempt: 1, dpop_offered: false })
            .await
    }

    /// Forgets the tokens of the MCP server at `server_url`, here and in the store.
    ///
    /// # Errors
    /// When the store cannot be written.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is forgotten unless the future completes.
    pub async fn forget(&self, server_url: &str) -> Result<(), AuthError> {
        let server = reqwest::Url::parse(server_url)
            .map_err(|e| AuthError::Config(format!("invalid MCP server URL {server_url:?}: {e}")))?;
        let mut st = self.inner.state.lock().await;
        st.session = None;
        self.inner.cfg.store.remove(&canonical_resource(&server))
    }

    /// How many authorizations one request may trigger.
    pub(crate) fn max_authorizations(&self) -> u32 {
        self.inner.cfg.max_authorizations
    }
}

/// Configures an [`OAuthClient`].
#[must_use]
#[cfg(feature = "auth-client")]
pub struct OAuthClientBuilder {
    cfg: Config,
    http: Option<reqwest::Client>,
    addresses: AddressPolicy,
}

#[cfg(feature = "auth-client")]
impl std::fmt::Debug for OAuthClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClientBuilder").field("client_name", &self.cfg.client_name).finish_non_exhaustive()
    }
}

#[cfg(feature = "auth-client")]
impl OAuthClientBuilder {
    /// The `client_name` registered (default `portico`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.cfg.client_name = name.into();
        self
    }

    /// How the user is sent to the authorization endpoint and back (default
    /// [`HeadlessRedirect`]).
    pub fn redirect(mut self, handler: impl RedirectHandler) -> Self {
        self.cfg.redirect = Arc::new(handler);
        self
    }

    /// Where tokens are kept (default [`MemoryTokenStore`]).
    pub fn token_store(mut self, store: impl TokenStore) -> Self {
        self.cfg.store = Arc::new(store);
        self
    }

    /// Pre-registered credentials used with any authorization server (a public client when
    /// `secret` is `None`). Prefer [`client_credentials_for`](Self::client_credentials_for):
    /// credentials belong to one issuer.
    pub fn client_credentials(mut self, client_id: impl Into<String>, secret: Option<String>) -> Self {
        self.cfg.credentials.push((None, ClientInfo::new(client_id, secret)));
        self
    }

    /// Pre-registered credentials for the authorization server `issuer` only.
    pub fn client_credentials_for(
        mut self,
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        secret: Option<String>,
    ) -> Self {
        self.cfg.credentials.push((Some(issuer.into()), ClientInfo::new(client_id, secret)));
        self
    }

    /// Authenticates at the token endpoint with JWTs signed by `key` (`private_key_jwt`).
    pub fn private_key_jwt(mut self, key: SigningKey) -> Self {
        self.cfg.signing_key = Some(Arc::new(key));
        self
    }

    /// The https URL of this client's Client ID Metadata Document, used as `client_id` by
    /// authorization servers that support them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.cfg.metadata_url = Some(url.into());
        self
    }

    /// The grant (default [`GrantType::AuthorizationCode`]).
    pub fn grant(mut self, grant: GrantType) -> Self {
        self.cfg.grant = grant;
        self
    }

    /// The JWT bearer grant with `assertion`, e.g. a workload identity token whose audience
    /// is the authorization server (RFC 7523 §2.1). A refused assertion is reported, never
    /// retried with another grant.
    pub fn jwt_bearer(mut self, assertion: impl Into<String>) -> Self {
        self.cfg.grant = GrantType::JwtBearer;
        self.cfg.assertion = Some(Assertion::Static(assertion.into()));
        self
    }

    /// Enterprise-managed authorization (cross-app access): the user's ID token is exchanged
    /// at `idp` for an identity assertion (ID-JAG) for the authorization server, then used as
    /// a JWT bearer grant there with the pre-registered client credentials.
    pub fn enterprise_idp(mut self, idp: EnterpriseIdp) -> Self {
        self.cfg.grant = GrantType::JwtBearer;
        self.cfg.assertion = Some(Assertion::Enterprise(idp));
        self
    }

    /// Scopes always requested, besides those the server asks for.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.cfg.scope = Some(scope.into());
        self
    }

    /// Whether `offline_access` is requested when the authorization server lists it
    /// (default true: a refresh token spares the user another sign-in).
    pub fn offline_access(mut self, request: bool) -> Self {
        self.cfg.offline_access = request;
        self
    }

    /// How many authorizations one request may trigger before it fails (default 3, at
    /// least 1): the bound on step-up loops.
    pub fn max_authorizations(mut self, n: u32) -> Self {
        self.cfg.max_authorizations = n.max(1);
        self
    }

    /// The `application_type` sent in Dynamic Client Registration: `native` (the default:
    /// desktop, CLI, loopback redirects) or `web`.
    pub fn application_type(mut self, kind: impl Into<String>) -> Self {
        self.cfg.application_type = kind.into();
        self
    }

    /// Whether tokens are bound to a DPoP key (RFC 9449) when the authorization server
    /// supports it (advertises `ES256` in `dpop_signing_alg_values_supported`); default true.
    /// Bound tokens are sent as `Authorization: DPoP …` with a fresh proof on every request,
    /// and the servers' DPoP nonces are honoured.
    pub fn dpop(mut self, enable: bool) -> Self {
        self.cfg.dpop = enable;
        self
    }

    /// Which addresses discovery, registration and token requests may reach (default
    /// [`AddressPolicy::MatchServer`]: loopback and private networks only for an MCP server
    /// that is on one itself; never link-local, such as cloud metadata services).
    pub fn address_policy(mut self, policy: AddressPolicy) -> Self {
        self.addresses = policy;
        self
    }

    /// The HTTP client for metadata, registration, authorization and token requests. It
    /// must not follow redirects (`reqwest::redirect::Policy::none()`), or the headless
    /// redirect cannot read the authorization response. Its resolver is its own: the
    /// [`address_policy`](Self::address_policy) then checks each hostname once before the
    /// request, and a DNS answer that changes by the time it connects is not caught.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// The client.
    ///
    /// # Errors
    /// When the default HTTP client cannot be built, or the configuration is unusable.
    pub fn build(self) -> Result<OAuthClient, AuthError> {
        if let Some(url) = &self.cfg.metadata_url {
            let ok = reqwest::Url::parse(url).is_ok_and(|u| u.scheme() == "https" && u.path() != "/");
            if !ok {
                return Err(AuthError::Config(format!(
                    "the client metadata document URL {url:?} must be an https URL with a path"
                )));
            }
        }
        if self.cfg.grant == GrantType::JwtBearer && self.cfg.assertion.is_none() {
            return Err(AuthError::Config("the JWT bearer grant needs jwt_bearer(…) or enterprise_idp(…)".into()));
        }
        if self.cfg.grant == GrantType::ClientCredentials && self.cfg.credentials.is_empty() {
            return Err(AuthError::Config("the client credentials grant needs client_credentials(…)".into()));
        }
        let guard = address::Guard::new(self.addresses);
        let own_http = self.http.is_some();
        let http = match self.http {
            Some(h) => h,
            None => reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .dns_resolver(Arc::new(address::GuardedResolver(guard.clone())))
                .build()
                .map_err(|e| AuthError::Config(format!("cannot build the HTTP client: {e}")))?,
        };
        let dpop_key = if self.cfg.dpop { Some(jwt::DpopKey::generate()?) } else { None };
        Ok(OAuthClient {
            inner: Arc::new(Inner {
                dpop_key,
                cfg: self.cfg,
                http,
                guard,
                own_http,
                state: tokio::sync::Mutex::new(flow::State::default()),
            }),
        })
    }
}

#[cfg(feature = "auth-server")]
pub mod server;
