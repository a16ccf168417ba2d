//! `/approvals`: the pending approvals, live, and their answers.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::{Admin, Caller, forward, refuse, sse};
use crate::approvals::{Answer, AnswerError, Choice, Event};

pub(super) async fn list(State(admin): State<Admin>) -> Response {
    Json(admin.approvals.list()).into_response()
}

#[derive(Deserialize)]
pub(super) struct Decision {
    decision: String,
    #[serde(default)]
    who: Option<String>,
    /// A sampling request's params as the person edited them.
    #[serde(default)]
    params: Option<serde_json::Value>,
}

pub(super) async fn answer(
    State(admin): State<Admin>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(d): Json<Decision>,
) -> Response {
    let Some(choice) = Choice::parse(&d.decision) else {
        return refuse(StatusCode::BAD_REQUEST, "decision must be allow_once, allow_session, allow_always or deny");
    };
    // A browser session answers as itself; a bearer holder may say who they are.
    let who = match caller.channel {
        "ui" => caller.principal,
        _ => d.who.unwrap_or(caller.principal),
    };
    let mut answer = Answer::now(choice, caller.channel, who);
    if let Some(params) = d.params {
        answer = answer.with_edited(params);
    }
    match admin.approvals.answer(&id, answer) {
        Ok(()) => Json(json!({ "id": id, "decision": choice.as_str() })).into_response(),
        Err(e @ AnswerError::NotEditable(_)) => refuse(StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => refuse(StatusCode::NOT_FOUND, &e.to_string()),
    }
}

/// The pending approvals first (each a `requested` event, shaped as the live ones), then
/// every change as it happens.
pub(super) async fn events(State(admin): State<Admin>) -> Response {
    let rx = admin.approvals.subscribe();
    let current = admin.approvals.list();
    sse(move |tx| async move {
        for p in current {
            let event = serde_json::to_value(Event::Requested(p)).unwrap_or_default();
            if tx.send(event).await.is_err() {
                return;
            }
        }
        forward(rx, tx).await;
    })
    .into_response()
}
