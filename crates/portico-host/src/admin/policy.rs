//! `/policy`: the rules in effect, "explain", and the stored "always allow" answers.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Admin, Refusal, refuse};
use crate::policy::{AlwaysStore, Method, Request};

/// The rules in order, as the config writes them, and the defaults in force.
pub(super) async fn rules(State(admin): State<Admin>) -> Response {
    let config = admin.host.config();
    let defaults = match &admin.supervisor {
        Some(s) => *s.policy().defaults(),
        None => crate::policy::Defaults::default(),
    };
    let defaults = json!({
        "tools": defaults.tools.as_str(),
        "trusted_read_only": defaults.trusted_read_only.as_str(),
        "resources": defaults.resources.as_str(),
        "prompts": defaults.prompts.as_str(),
        "sampling": defaults.sampling.as_str(),
        "elicitation": defaults.elicitation.as_str(),
        "hide_denied": defaults.hide_denied,
    });
    Json(json!({ "rules": config.policy.rules, "defaults": defaults })).into_response()
}

#[derive(Deserialize)]
pub(super) struct ExplainBody {
    tool: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    principal: Option<String>,
}

/// What policy decides for a tool call with these arguments, and why the rules above did not
/// match: `{explanation, text}`.
pub(super) async fn explain(State(admin): State<Admin>, Json(body): Json<ExplainBody>) -> Response {
    let Some(supervisor) = &admin.supervisor else {
        return refuse(StatusCode::NOT_FOUND, "no policy is served here");
    };
    let registry = admin.host.registry();
    let Some(entry) = registry.tools.get(&body.tool) else {
        return refuse(StatusCode::NOT_FOUND, "no such tool");
    };
    let trusted = admin.host.config().servers.get(&entry.origin.server).is_some_and(|s| s.trusted);
    let arguments = body.arguments.unwrap_or_else(|| json!({}));
    let principal = body.principal.unwrap_or_else(|| "local".to_owned());
    let req = Request::new(Method::CallTool, &entry.origin.server, &entry.origin.name)
        .exposed(&entry.tool.name)
        .trusted(trusted)
        .with_tool(Some(&entry.tool))
        .arguments(&arguments)
        .principal(&principal);
    let explanation = supervisor.policy().explain(&req);
    Json(json!({ "text": explanation.to_string(), "explanation": explanation })).into_response()
}

fn store(admin: &Admin) -> Result<std::sync::Arc<AlwaysStore>, Refusal> {
    admin
        .supervisor
        .as_ref()
        .and_then(|s| s.policy().store().cloned())
        .ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, "no store of \"always allow\" answers is served here"))
}

pub(super) async fn always(State(admin): State<Admin>) -> Result<Response, Refusal> {
    let rules = store(&admin)?.list().map_err(unavailable)?;
    Ok(Json(rules).into_response())
}

pub(super) async fn revoke(State(admin): State<Admin>, Path(id): Path<String>) -> Result<Response, Refusal> {
    if !store(&admin)?.revoke(&id).map_err(unavailable)? {
        return Err(Refusal::new(StatusCode::NOT_FOUND, "no such stored answer"));
    }
    Ok(Json(json!({ "revoked": id })).into_response())
}

fn unavailable(e: crate::policy::StoreError) -> Refusal {
    Refusal::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
}
