//! `/calls`: the calls in progress through the host, live, and cancelling one.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{Admin, forward, refuse, sse};
use crate::activity::CallEvent;

pub(super) async fn list(State(admin): State<Admin>) -> Response {
    Json(admin.host.activity().list()).into_response()
}

/// The calls in progress first (each a `started` event), then every change.
pub(super) async fn events(State(admin): State<Admin>) -> Response {
    let activity = admin.host.activity().clone();
    let rx = activity.subscribe();
    let current = activity.list();
    sse(move |tx| async move {
        for call in current {
            let event = serde_json::to_value(CallEvent::Started { call }).unwrap_or_default();
            if tx.send(event).await.is_err() {
                return;
            }
        }
        forward(rx, tx).await;
    })
    .into_response()
}

pub(super) async fn cancel(State(admin): State<Admin>, Path(id): Path<String>) -> Response {
    if admin.host.activity().cancel(&id) {
        Json(json!({ "cancelled": id })).into_response()
    } else {
        refuse(StatusCode::NOT_FOUND, "no such call in progress (it may have ended)")
    }
}
