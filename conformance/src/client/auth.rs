//! The OAuth client of the `auth/*` scenarios, configured from `MCP_CONFORMANCE_CONTEXT`.
//!
//! Everything the suite checks (discovery order, PKCE, `state`, `iss`, `resource`, scope
//! selection, step-up, registration, token endpoint authentication) is Portico's
//! `auth` module's doing; this only picks the grant and the credentials the scenario gives.

use portico::auth::{EnterpriseIdp, GrantType, HeadlessRedirect, OAuthClient, SigningKey};
use serde_json::Value;

/// The Client ID Metadata Document URL the suite expects (`auth/basic-cimd`).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The OAuth client for scenario `name` with its context, or `None` for scenarios without
/// authorization.
pub fn client_for(name: &str, context: &Value) -> Result<Option<OAuthClient>, String> {
    if !name.starts_with("auth/") {
        return Ok(None);
    }
    let field = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut b = OAuthClient::builder()
        .client_name("portico-conformance-client")
        .redirect(HeadlessRedirect::new("http://localhost:3000/callback"))
        .client_metadata_url(CLIENT_METADATA_URL);
    if let Some(id) = field("client_id") {
        b = b.client_credentials(id, field("client_secret"));
    }
    if let Some(pem) = field("private_key_pem") {
        let alg = field("signing_algorithm").unwrap_or_else(|| "ES256".into());
        let key = SigningKey::from_pkcs8_pem(&pem, &alg).map_err(|e| e.to_string())?;
        b = b.private_key_jwt(key);
    }
    if name.starts_with("auth/client-credentials") {
        b = b.grant(GrantType::ClientCredentials);
    }
    if let Some(jwt) = field("valid_jwt") {
        // Workload identity federation: the suite's workload token, audience the AS.
        b = b.jwt_bearer(jwt);
    }
    if let (Some(endpoint), Some(idp_client), Some(id_token)) =
        (field("idp_token_endpoint"), field("idp_client_id"), field("idp_id_token"))
    {
        b = b.enterprise_idp(EnterpriseIdp::new(endpoint, idp_client, id_token));
    }
    b.build().map(Some).map_err(|e| e.to_string())
}
