//! The flow itself: discovery, registration, the grants, refresh, and what to do about a
//! `401` or `403` from the MCP server.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use reqwest::Url;
use reqwest::header::ACCEPT;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use tracing::debug;

use super::metadata::{self, AuthorizationServerMetadata, BearerChallenge, ProtectedResourceMetadata, union_scopes};
use super::store::{ClientInfo, StoredAuth, TokenSet};
use super::token::{self, ClientAuth, Dpop, RegistrationRequest, read_limited};
use super::{Assertion, AuthError, EnterpriseIdp, GrantType, OAuthClient};

/// The `grant_type` of a JWT assertion grant (RFC 7523).
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Refresh this many seconds before the access token expires.
const EXPIRY_MARGIN: u64 = 30;

/// What the client knows, behind the client's lock.
#[derive(Default)]
pub(crate) struct State {
    /// The store was read for this resource.
    loaded: Option<String>,
    /// The tokens in use, and where they come from.
    pub session: Option<StoredAuth>,
    /// Metadata of the issuers met, by issuer.
    metadata: HashMap<String, AuthorizationServerMetadata>,
    /// Client credentials, by issuer.
    pub registrations: HashMap<String, ClientInfo>,
    /// The scopes of the last authorization request.
    requested_scope: Option<String>,
    /// DPoP nonces of token endpoints, by endpoint.
    as_nonces: HashMap<String, Option<String>>,
    /// The MCP server's DPoP nonce.
    rs_nonce: Option<String>,
    /// The MCP server refused a DPoP-bound token without offering DPoP: it takes bearer
    /// tokens only, so tokens are no longer bound.
    rs_bearer_only: bool,
}

/// What to put on one request to the MCP server.
pub(crate) struct RequestAuth {
    /// The access token (to recognise a refused one).
    pub token: String,
    /// The `Authorization` value: `Bearer …` or `DPoP …`.
    pub authorization: String,
    /// The `DPoP` proof, for a DPoP-bound token.
    pub dpop: Option<String>,
}

/// The MCP server refused a request: what it said, and with which token (no `Debug`: it
/// holds a token).
pub(crate) struct Challenge {
    /// `401` or `403`.
    pub status: u16,
    /// Its `WWW-Authenticate: Bearer` challenge.
    pub bearer: Option<BearerChallenge>,
    /// The access token the refused request carried.
    pub sent: Option<String>,
    /// The answer offered the `DPoP` scheme (`WWW-Authenticate: DPoP …`).
    pub dpop_offered: bool,
    /// 1 for the first authorization of this request, 2 for the next…
    pub attempt: u32,
}

/// What discovery found.
struct Discovered {
    prm: Option<ProtectedResourceMetadata>,
    /// The RFC 8707 resource: the metadata's, verbatim, or the server's canonical URI.
    resource: String,
    meta: AuthorizationServerMetadata,
}

/// `n` random bytes, base64url.
pub(crate) fn random_token(n: usize) -> String {
    let mut buf = vec![0u8; n];
    rand::rng().fill_bytes(&mut buf);
    URL_SAFE_NO_PAD.encode(buf)
}

/// The PKCE `S256` challenge of `verifier`.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl OAuthClient {
    /// Reads the store once per resource.
    pub(super) fn load(&self, st: &mut State, server: &Url) {
        let key = metadata::canonical_resource(server);
        if st.loaded.as_deref() == Some(key.as_str()) {
            return;
        }
        st.loaded = Some(key.clone());
        match self.inner.cfg.store.load(&key) {
            Ok(Some(saved)) => {
                st.registrations.insert(saved.issuer.clone(), saved.client.clone());
                st.session = Some(saved);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read the token store"),
        }
    }

    /// The credentials of a `method` request to `url` on `server`: the access token
    /// (refreshed first when it has expired), and a DPoP proof when the token is bound.
    ///
    /// # Cancel safety
    /// Cancel safe, except that a refresh dropped midway is done again next time.
    pub(crate) async fn authorization(&self, server: &Url, method: &str, url: &Url) -> Option<RequestAuth> {
        let mut st = self.inner.state.lock().await;
        self.load(&mut st, server);
        let expired = st.session.as_ref()?.tokens.is_expired(EXPIRY_MARGIN);
        if expired {
            self.inner.guard.enter(server).await;
        }
        if expired && let Err(e) = self.refresh(&mut st, server).await {
            debug!(error = %e, "refreshing an expired access token failed");
        }
        let tokens = &st.session.as_ref()?.tokens;
        let token = tokens.access_token.clone();
        let bound = tokens.token_type.eq_ignore_ascii_case("dpop");
        let key = self.inner.dpop_key.as_ref().filter(|_| bound);
        let Some(key) = key else {
            return Some(RequestAuth { authorization: format!("Bearer {token}"), token, dpop: None });
        };
        match key.proof(method, url, Some(&token), st.rs_nonce.as_deref()) {
            Ok(proof) => Some(RequestAuth { authorization: format!("DPoP {token}"), token, dpop: Some(proof) }),
            Err(e) => {
                tracing::warn!(error = %e, "cannot make a DPoP proof");
                None
            }
        }
    }

    /// Keeps the DPoP nonce the MCP server sent (RFC 9449 §9).
    pub(crate) async fn resource_nonce(&self, nonce: String) {
        self.inner.state.lock().await.rs_nonce = Some(nonce);
    }

    /// DPoP for a token request to `meta`'s token endpoint, when the server binds tokens
    /// (or `bound`: the tokens being refreshed are bound).
    fn dpop<'a>(&'a self, st: &'a mut State, meta: &AuthorizationServerMetadata, bound: bool) -> Option<Dpop<'a>> {
        let key = self.inner.dpop_key.as_ref().filter(|_| bound || (meta.supports_dpop() && !st.rs_bearer_only))?;
        let nonce = st.as_nonces.entry(meta.token_endpoint.clone()).or_default();
        Some(Dpop { key, nonce })
    }

    /// Deals with a `401` or a `403 insufficient_scope`: on return `Ok`, the request may be
    /// sent again with [`authorization`](Self::authorization).
    pub(crate) async fn challenged(&self, server: &Url, ch: Challenge) -> Result<(), AuthError> {
        let mut st = self.inner.state.lock().await;
        self.load(&mut st, server);
        self.inner.guard.enter(server).await;
        if ch.bearer.as_ref().and_then(|b| b.error.as_deref()) == Some("use_dpop_nonce") {
            return Ok(()); // the transport kept the new nonce: send again
        }
        let current = st.session.as_ref().map(|s| s.tokens.access_token.clone());
        let step_up = ch.status == 403;
        let bound = st.session.as_ref().is_some_and(|s| s.tokens.token_type.eq_ignore_ascii_case("dpop"));
        if ch.status == 401 && bound && current.is_some() && current == ch.sent && !ch.dpop_offered {
            // A resource server that knows DPoP says so in its challenge (RFC 9449 §7.1); this
            // one refused the bound token with a Bearer challenge only: authorize again for a
            // bearer token.
            debug!("the MCP server does not take DPoP-bound tokens; asking for bearer tokens");
            st.rs_bearer_only = true;
            st.session = None;
        }
        let current = st.session.as_ref().map(|s| s.tokens.access_token.clone());
        if !step_up && ch.attempt == 1 && current.is_some() && current != ch.sent {
            return Ok(()); // tokens changed since the request left: just send it again
        }
        let found = self.discover(server, ch.bearer.as_ref()).await?;
        let same_issuer = st.session.as_ref().is_some_and(|s| s.issuer == found.meta.issuer);
        if !step_up && ch.attempt == 1 && same_issuer {
            match self.refresh(&mut st, server).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => debug!(error = %e, "refresh failed; authorizing again"),
            }
        }
        let scope = self.select_scope(&st, &found, ch.bearer.as_ref(), step_up);
        let issuer = found.meta.issuer.clone();
        st.metadata.insert(issuer.clone(), found.meta.clone());
        let client = self.client_for(&mut st, &found, scope.as_deref()).await?;
        let tokens = match self.inner.cfg.grant {
            GrantType::AuthorizationCode => self.authorization_code(&mut st, &found, &client, scope.as_deref()).await?,
            GrantType::ClientCredentials => self.client_credentials(&mut st, &found, &client, scope.as_deref()).await?,
            GrantType::JwtBearer => self.jwt_bearer(&mut st, &found, &client, scope.as_deref()).await?,
        };
        st.requested_scope = scope;
        let saved = StoredAuth {
            issuer,
            token_endpoint: found.meta.token_endpoint.clone(),
            resource: found.resource.clone(),
            client,
            tokens,
        };
        self.keep(&mut st, server, saved);
        Ok(())
    }

    fn keep(&self, st: &mut State, server: &Url, saved: StoredAuth) {
        if let Err(e) = self.inner.cfg.store.save(&metadata::canonical_resource(server), &saved) {
            tracing::warn!(error = %e, "cannot save tokens");
        }
        st.session = Some(saved);
    }

    /// Refreshes the tokens in use. `Ok(false)` when there is no refresh token.
    async fn refresh(&self, st: &mut State, server: &Url) -> Result<bool, AuthError> {
        let Some(session) = st.session.clone() else { return Ok(false) };
        let Some(refresh_token) = session.tokens.refresh_token.clone() else { return Ok(false) };
        let meta = st.metadata.get(&session.issuer).cloned().unwrap_or_else(|| AuthorizationServerMetadata {
            issuer: session.issuer.clone(),
            token_endpoint: session.token_endpoint.clone(),
            ..Default::default()
        });
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("resource", session.resource.clone()),
        ];
        let bound = session.tokens.token_type.eq_ignore_ascii_case("dpop");
        let mut tokens = self.request_token(st, &meta, &session.client, form, bound).await?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(refresh_token); // not rotated: keep the old one
        }
        if tokens.scope.is_none() {
            tokens.scope = session.tokens.scope.clone();
        }
        debug!(issuer = %session.issuer, "access token refreshed");
        self.keep(st, server, StoredAuth { tokens, ..session });
        Ok(true)
    }

    /// GETs a JSON metadata document: `Ok(None)` when the server has none there.
    async fn fetch_json<T: DeserializeOwned>(&self, url: &Url) -> Result<Option<T>, AuthError> {
        self.reach(url).await?;
        let resp = self
            .inner
            .http
            .get(url.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| AuthError::http(url.as_str(), e))?;
        if !resp.status().is_success() {
            debug!(%url, status = %resp.status(), "no metadata here");
            return Ok(None);
        }
        let body = read_limited(resp, url.as_str()).await?;
        serde_json::from_slice(&body).map(Some).map_err(|e| AuthError::metadata(url.as_str(), e.to_string()))
    }

    /// Refuses a URL whose address the policy does not allow (see `address`).
    async fn reach(&self, url: &Url) -> Result<(), AuthError> {
        self.inner.guard.check(url, self.inner.own_http).await
    }

    /// Protected resource metadata, then authorization server metadata.
    async fn discover(&self, server: &Url, ch: Option<&BearerChallenge>) -> Result<Discovered, AuthError> {
        let mut candidates = Vec::new();
        if let Some(u) = ch.and_then(|c| c.resource_metadata.as_deref()) {
            match server.join(u) {
                Ok(u) => candidates.push(u),
                Err(e) => debug!(url = u, error = %e, "invalid resource_metadata in the challenge"),
            }
        }
        for u in metadata::protected_resource_metadata_urls(server) {
            if !candidates.contains(&u) {
                candidates.push(u);
            }
        }
        let mut prm: Option<ProtectedResourceMetadata> = None;
        for url in &candidates {
            if let Some(found) = self.fetch_json::<ProtectedResourceMetadata>(url).await? {
                if !metadata::resource_matches(&found.resource, server) {
                    return Err(AuthError::ResourceMismatch {
                        advertised: found.resource,
                        server: metadata::canonical_resource(server),
                    });
                }
                if found.authorization_servers.is_empty() {
                    return Err(AuthError::metadata(url.as_str(), "authorization_servers is empty"));
                }
                prm = Some(found);
                break;
            }
        }
        let (issuer, resource) = match &prm {
            Some(p) => (p.authorization_servers[0].clone(), p.resource.clone()),
            // 2025-03-26: the MCP server's origin is the authorization server.
            None => (metadata::issuer_of_origin(server), metadata::canonical_resource(server)),
        };
        let issuer_url = Url::parse(&issuer)
            .map_err(|e| AuthError::Config(format!("invalid authorization server {issuer:?}: {e}")))?;
        let urls = metadata::authorization_server_metadata_urls(&issuer_url);
        for url in &urls {
            let Some(meta) = self.fetch_json::<AuthorizationServerMetadata>(url).await? else { continue };
            let same = meta.issuer == issuer || meta.issuer.trim_end_matches('/') == issuer.trim_end_matches('/');
            // RFC 8414 §3.3 / MCP 2026-07-28: metadata for another issuer MUST NOT be used. A
            // 2025-03-26 server has no issuer to compare with (the base URL is derived from
            // the MCP URL, and its metadata may name a path below it): accepted as it is.
            if !same && prm.is_none() {
                debug!(issuer = %meta.issuer, base = %issuer, "2025-03-26 metadata with an issuer of its own");
            } else if !same {
                return Err(AuthError::metadata(
                    url.as_str(),
                    format!("issuer {:?} is not the issuer {issuer:?} it was looked up for", meta.issuer),
                ));
            }
            return Ok(Discovered { prm, resource, meta });
        }
        if prm.is_none() {
            debug!(%issuer, "no metadata: using the 2025-03-26 default endpoints");
            return Ok(Discovered { prm, resource, meta: AuthorizationServerMetadata::fallback(&issuer_url) });
        }
        let tried = urls.iter().map(Url::as_str).collect::<Vec<_>>().join(", ");
        Err(AuthError::DiscoveryFailed { what: issuer, tried })
    }

    /// The scopes to request: the challenge's, else the resource's `scopes_supported`, else
    /// none; on step-up, with those requested before; `offline_access` when offered.
    fn select_scope(
        &self,
        st: &State,
        found: &Discovered,
        ch: Option<&BearerChallenge>,
        step_up: bool,
    ) -> Option<String> {
        let challenged = ch.and_then(|c| c.scope.clone());
        let supported = found.prm.as_ref().and_then(|p| p.scopes_supported.as_ref()).map(|s| s.join(" "));
        let base = challenged.or(supported);
        let mut parts: Vec<&str> = Vec::new();
        if step_up {
            parts.extend(st.requested_scope.as_deref());
        }
        parts.extend(base.as_deref());
        parts.extend(self.inner.cfg.scope.as_deref());
        let wants_offline = self.inner.cfg.offline_access
            && self.inner.cfg.grant == GrantType::AuthorizationCode
            && found.meta.supports_scope("offline_access");
        if wants_offline && !parts.is_empty() {
            parts.push("offline_access");
        }
        union_scopes(parts)
    }

    /// The client credentials for this authorization server: pre-registered, a Client ID
    /// Metadata Document, or a new registration.
    async fn client_for(
        &self,
        st: &mut State,
        found: &Discovered,
        scope: Option<&str>,
    ) -> Result<ClientInfo, AuthError> {
        let cfg = &self.inner.cfg;
        let meta = &found.meta;
        if let Some(c) = st.registrations.get(&meta.issuer) {
            return Ok(c.clone());
        }
        let pre = cfg.credentials.iter().find(|(i, _)| i.as_deref() == Some(meta.issuer.as_str()));
        let pre = pre.or_else(|| cfg.credentials.iter().find(|(i, _)| i.is_none()));
        let client = if let Some((_, c)) = pre {
            c.clone()
        } else if let Some(url) = cfg.metadata_url.as_ref().filter(|_| meta.client_id_metadata_document_supported) {
            ClientInfo::new(url.clone(), None)
        } else if let Some(endpoint) = &meta.registration_endpoint {
            let auth_method = if cfg.signing_key.is_some() {
                "private_key_jwt"
            } else if meta.supports_auth_method("none") {
                "none"
            } else if meta.supports_auth_method("client_secret_basic") {
                "client_secret_basic"
            } else {
                "client_secret_post"
            };
            let code = cfg.grant == GrantType::AuthorizationCode;
            let grant = match cfg.grant {
                GrantType::ClientCredentials => "client_credentials",
                _ => JWT_BEARER_GRANT,
            };
            let req = RegistrationRequest {
                client_name: &cfg.client_name,
                redirect_uris: if code { vec![cfg.redirect.redirect_uri()] } else { Vec::new() },
                grant_types: if code { vec!["authorization_code", "refresh_token"] } else { vec![grant] },
                response_types: if code { vec!["code"] } else { Vec::new() },
                token_endpoint_auth_method: auth_method,
                application_type: &cfg.application_type,
                scope,
            };
            if let Ok(u) = Url::parse(endpoint) {
                self.reach(&u).await?;
            }
            let c = token::register(&self.inner.http, endpoint, &req).await?;
            debug!(issuer = %meta.issuer, client_id = %c.client_id, "registered a client");
            c
        } else {
            return Err(AuthError::NotConfigured { issuer: meta.issuer.clone() });
        };
        st.registrations.insert(meta.issuer.clone(), client.clone());
        Ok(client)
    }

    /// The authorization code grant with PKCE.
    async fn authorization_code(
        &self,
        st: &mut State,
        found: &Discovered,
        client: &ClientInfo,
        scope: Option<&str>,
    ) -> Result<TokenSet, AuthError> {
        let meta = &found.meta;
        let s256_ok = meta.code_challenge_methods_supported.iter().flatten().any(|m| m == "S256");
        if !s256_ok {
            return Err(AuthError::PkceUnsupported { issuer: meta.issuer.clone() });
        }
        let endpoint = meta
            .authorization_endpoint
            .as_deref()
            .ok_or_else(|| AuthError::metadata(&meta.issuer, "no authorization_endpoint"))?;
        let mut url = Url::parse(endpoint)
            .map_err(|e| AuthError::metadata(&meta.issuer, format!("invalid authorization_endpoint: {e}")))?;
        let verifier = random_token(32);
        let state = random_token(16);
        let redirect_uri = self.inner.cfg.redirect.redirect_uri();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &s256(&verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state);
            if let Some(s) = scope {
                q.append_pair("scope", s);
            }
            q.append_pair("resource", &found.resource);
        }
        self.reach(&url).await?;
        let back = self.inner.cfg.redirect.authorize(&self.inner.http, url).await?;
        let code = validate_response(&back, &state, meta)?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
            ("resource", found.resource.clone()),
        ];
        let mut tokens = self.request_token(st, meta, client, form, false).await?;
        if tokens.scope.is_none() {
            tokens.scope = scope.map(str::to_owned);
        }
        Ok(tokens)
    }

    /// A token request to `meta`'s token endpoint for `client`, authenticated as the server
    /// allows, with a DPoP proof when the server binds tokens (or `bound`: refreshing bound ones).
    async fn request_token(
        &self,
        st: &mut State,
        meta: &AuthorizationServerMetadata,
        client: &ClientInfo,
        form: Vec<(&str, String)>,
        bound: bool,
    ) -> Result<TokenSet, AuthError> {
        if let Ok(u) = Url::parse(&meta.token_endpoint) {
            self.reach(&u).await?;
        }
        let auth = token::choose_auth(client, self.inner.cfg.signing_key.as_deref(), meta);
        let dpop = self.dpop(st, meta, bound);
        token::request_token(&self.inner.http, meta, client, auth, form, dpop).await
    }

    /// The client credentials grant.
    async fn client_credentials(
        &self,
        st: &mut State,
        found: &Discovered,
        client: &ClientInfo,
        scope: Option<&str>,
    ) -> Result<TokenSet, AuthError> {
        let mut form = vec![("grant_type", "client_credentials".to_owned())];
        if let Some(s) = scope {
            form.push(("scope", s.to_owned()));
        }
        form.push(("resource", found.resource.clone()));
        self.request_token(st, &found.meta, client, form, false).await
    }
}

impl OAuthClient {
    /// The JWT bearer grant (RFC 7523 §2.1), with the configured assertion or one exchanged
    /// at the enterprise identity provider (RFC 8693).
    async fn jwt_bearer(
        &self,
        st: &mut State,
        found: &Discovered,
        client: &ClientInfo,
        scope: Option<&str>,
    ) -> Result<TokenSet, AuthError> {
        let assertion = match &self.inner.cfg.assertion {
            Some(Assertion::Static(a)) => a.clone(),
            Some(Assertion::Enterprise(idp)) => self.exchange_id_token(idp, found, scope).await?,
            None => return Err(AuthError::Config("the JWT bearer grant has no assertion".into())),
        };
        let mut form = vec![("grant_type", JWT_BEARER_GRANT.to_owned()), ("assertion", assertion)];
        if let Some(s) = scope {
            form.push(("scope", s.to_owned()));
        }
        form.push(("resource", found.resource.clone()));
        self.request_token(st, &found.meta, client, form, false).await
    }

    /// Exchanges the user's ID token for an ID-JAG for the authorization server.
    async fn exchange_id_token(
        &self,
        idp: &EnterpriseIdp,
        found: &Discovered,
        scope: Option<&str>,
    ) -> Result<String, AuthError> {
        let idp_meta = AuthorizationServerMetadata {
            issuer: idp.token_endpoint.clone(),
            token_endpoint: idp.token_endpoint.clone(),
            ..Default::default()
        };
        let mut form = vec![
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange".to_owned()),
            ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag".to_owned()),
            ("audience", found.meta.issuer.clone()),
            ("resource", found.resource.clone()),
            ("subject_token", idp.id_token.clone()),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token".to_owned()),
        ];
        if let Some(s) = scope {
            form.push(("scope", s.to_owned()));
        }
        let idp_client = ClientInfo::new(idp.client_id.clone(), None);
        // The identity provider comes from the configuration, not from discovery: it may be on
        // the user's own network whatever the MCP server's address.
        let previous = self.inner.guard.allow_local();
        let jag = token::request_token(&self.inner.http, &idp_meta, &idp_client, ClientAuth::None, form, None).await;
        self.inner.guard.restore(previous);
        Ok(jag?.access_token)
    }
}

/// Checks the authorization response (RFC 9207 `iss` first, then `state`) and returns the
/// code.
pub(crate) fn validate_response(
    back: &Url,
    state: &str,
    meta: &AuthorizationServerMetadata,
) -> Result<String, AuthError> {
    let params: HashMap<String, String> = back.query_pairs().into_owned().collect();
    match params.get("iss") {
        // Simple string comparison: no normalization (RFC 9207 §2.4).
        Some(iss) if *iss != meta.issuer => {
            return Err(AuthError::InvalidAuthorizationResponse(format!(
                "iss {iss:?} is not the issuer {:?}",
                meta.issuer
            )));
        }
        None if meta.authorization_response_iss_parameter_supported => {
            return Err(AuthError::InvalidAuthorizationResponse(format!(
                "{} advertises authorization_response_iss_parameter_supported but sent no iss",
                meta.issuer
            )));
        }
        _ => {}
    }
    if params.get("state").map(String::as_str) != Some(state) {
        return Err(AuthError::InvalidAuthorizationResponse("state does not match the request's".into()));
    }
    if let Some(error) = params.get("error") {
        return Err(AuthError::AuthorizationDenied {
            error: error.clone(),
            description: params.get("error_description").cloned(),
        });
    }
    params
        .get("code")
        .filter(|c| !c.is_empty())
        .cloned()
        .ok_or_else(|| AuthError::InvalidAuthorizationResponse("no code in the redirect".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(iss_supported: bool) -> AuthorizationServerMetadata {
        AuthorizationServerMetadata {
            issuer: "http://as.test".into(),
            authorization_response_iss_parameter_supported: iss_supported,
            ..Default::default()
        }
    }

    fn back(q: &str) -> Url {
        Url::parse(&format!("http://localhost/cb?{q}")).expect("test URL")
    }

    #[test]
    fn iss_rules() {
        let ok = validate_response(&back("code=c&state=s&iss=http%3A%2F%2Fas.test"), "s", &meta(true));
        assert_eq!(ok.ok().as_deref(), Some("c"));
        assert!(validate_response(&back("code=c&state=s"), "s", &meta(true)).is_err());
        assert!(validate_response(&back("code=c&state=s"), "s", &meta(false)).is_ok());
        assert!(validate_response(&back("code=c&state=s&iss=http%3A%2F%2Fevil"), "s", &meta(false)).is_err());
        assert!(validate_response(&back("code=c&state=s&iss=http%3A%2F%2Fas.test%2F"), "s", &meta(true)).is_err());
        // A mismatched iss is refused before its error fields are looked at.
        let e = validate_response(&back("error=access_denied&state=s&iss=x"), "s", &meta(false));
        assert!(matches!(e, Err(AuthError::InvalidAuthorizationResponse(_))));
    }

    #[test]
    fn state_must_match() {
        assert!(validate_response(&back("code=c&state=other"), "s", &meta(false)).is_err());
        assert!(validate_response(&back("code=c"), "s", &meta(false)).is_err());
    }

    #[test]
    fn pkce_s256_is_base64url_sha256() {
        // Computed independently (Python hashlib + base64.urlsafe_b64encode, unpadded).
        assert_eq!(s256("dBjftJeZ4CVP-mB0unH1RTpkHTcIc0j1hVXYkxbU_Nt"), "JdeKNZpe8Tp2qEEwecvI7mgUib56yqAVFdfet88bfi4");
        assert_eq!(random_token(32).len(), 43);
    }
}
