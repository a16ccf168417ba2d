//! `/servers` and `/tools`: the upstreams (status, restart, enable and disable) and the
//! registry's tools (list, call through the host's call path, switch on and off).

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Admin, Caller, refuse};

/// The first revision of the stateless era.
const STATELESS_FROM: &str = "2026-07-28";

pub(super) async fn list(State(admin): State<Admin>) -> Response {
    let config = admin.host.config();
    let registry = admin.host.registry();
    let list: Vec<Value> = admin
        .host
        .statuses()
        .into_iter()
        .map(|s| {
            let exposed = registry.tools.values().filter(|t| t.origin.server == s.name).count();
            let enabled = config.servers.get(&s.name).is_some_and(|c| c.enabled);
            let era = s.protocol_version.as_deref().map(|v| if v >= STATELESS_FROM { "stateless" } else { "session" });
            let mut v = serde_json::to_value(&s).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.insert("enabled".into(), json!(enabled));
                o.insert("era".into(), json!(era));
                o.insert("tools_exposed".into(), json!(exposed));
            }
            v
        })
        .collect();
    Json(list).into_response()
}

pub(super) async fn restart(State(admin): State<Admin>, Path(name): Path<String>) -> Response {
    match admin.host.upstream(&name) {
        Some(up) => {
            up.restart();
            Json(json!({ "restarting": name })).into_response()
        }
        None => refuse(StatusCode::NOT_FOUND, "no such server"),
    }
}

pub(super) async fn enable(State(admin): State<Admin>, Path(name): Path<String>) -> Response {
    set_enabled(&admin, &name, true).await
}

pub(super) async fn disable(State(admin): State<Admin>, Path(name): Path<String>) -> Response {
    set_enabled(&admin, &name, false).await
}

/// Starts or stops a server by reloading the running config with it enabled or not (the
/// file is not changed: a reload of the file puts its own setting back).
async fn set_enabled(admin: &Admin, name: &str, on: bool) -> Response {
    let mut config = admin.host.config();
    let Some(server) = config.servers.get_mut(name) else {
        return refuse(StatusCode::NOT_FOUND, "no such server");
    };
    if server.enabled != on {
        server.enabled = on;
        admin.host.reload(config).await;
    }
    Json(json!({ "server": name, "enabled": on })).into_response()
}

pub(super) async fn tools(State(admin): State<Admin>) -> Response {
    let registry = admin.host.registry();
    let switches = admin.host.switches();
    let list: Vec<_> = registry
        .tools
        .values()
        .map(|e| {
            let enabled = switches.is_on(&e.tool.name);
            json!({
                "name": e.tool.name,
                "server": e.origin.server,
                "original": e.origin.name,
                "enabled": enabled,
                "off_for_sessions": switches.sessions_off(&e.tool.name),
                "hidden": admin.host.hides(e),
                "warnings": crate::registry::description_warnings(&e.tool),
                "tool": &*e.tool,
            })
        })
        .collect();
    Json(list).into_response()
}

#[derive(Deserialize)]
pub(super) struct CallBody {
    #[serde(default)]
    arguments: Option<Value>,
}

/// Calls a tool on behalf of the caller (`ui:<session>` or `admin`), through policy, approval
/// and the activity log like any other call. The answer is the tool's result, `isError`
/// included.
pub(super) async fn call(
    State(admin): State<Admin>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Json(body): Json<CallBody>,
) -> Response {
    if !admin.host.registry().tools.contains_key(&name) {
        return refuse(StatusCode::NOT_FOUND, "no such tool");
    }
    let arguments = match body.arguments {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return refuse(StatusCode::BAD_REQUEST, "arguments must be a JSON object"),
    };
    let result = admin.host.call_tool_by(&name, arguments, &caller.principal).await;
    Json(result).into_response()
}

#[derive(Deserialize)]
pub(super) struct Switch {
    enabled: bool,
    /// One downstream session only (`GET /sessions`); everyone when absent.
    #[serde(default)]
    session: Option<u64>,
}

pub(super) async fn switch(State(admin): State<Admin>, Path(name): Path<String>, Json(s): Json<Switch>) -> Response {
    let switches = admin.host.switches();
    let known = admin.host.registry().tools.contains_key(&name)
        || !switches.is_on(&name)
        || !switches.sessions_off(&name).is_empty();
    if !known {
        return refuse(StatusCode::NOT_FOUND, "no such tool");
    }
    match s.session {
        None => admin.host.set_tool_enabled(&name, s.enabled),
        Some(session) => {
            if !s.enabled && !admin.host.client_sessions().iter().any(|c| c.id == session) {
                return refuse(StatusCode::NOT_FOUND, "no such client session (see GET /sessions)");
            }
            admin.host.set_tool_enabled_for(&name, session, s.enabled);
        }
    }
    Json(json!({ "tool": name, "enabled": s.enabled, "session": s.session })).into_response()
}

/// The downstream client sessions, with the tools switched off for each alone.
pub(super) async fn sessions(State(admin): State<Admin>) -> Response {
    let switches = admin.host.switches();
    let list: Vec<Value> = admin
        .host
        .client_sessions()
        .into_iter()
        .map(|c| {
            let off: Vec<String> = switches.off_for(c.id).into_iter().collect();
            let mut v = serde_json::to_value(&c).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.insert("tools_off".into(), json!(off));
            }
            v
        })
        .collect();
    Json(list).into_response()
}
