//! The web UI's files, embedded in the binary: plain HTML, CSS and JavaScript modules, no
//! build step, nothing fetched from anywhere else. They live in `crates/portico-host/ui/`.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// `(name, content type, contents)` of every file under `/ui/assets/`.
const ASSETS: &[(&str, &str, &str)] = &[
    ("style.css", "text/css; charset=utf-8", include_str!("../../ui/style.css")),
    ("app.js", JS, include_str!("../../ui/app.js")),
    ("api.js", JS, include_str!("../../ui/api.js")),
    ("dom.js", JS, include_str!("../../ui/dom.js")),
    ("servers.js", JS, include_str!("../../ui/servers.js")),
    ("tools.js", JS, include_str!("../../ui/tools.js")),
    ("form.js", JS, include_str!("../../ui/form.js")),
    ("result.js", JS, include_str!("../../ui/result.js")),
    ("approvals.js", JS, include_str!("../../ui/approvals.js")),
    ("sampling.js", JS, include_str!("../../ui/sampling.js")),
    ("activity.js", JS, include_str!("../../ui/activity.js")),
    ("policy.js", JS, include_str!("../../ui/policy.js")),
];

const JS: &str = "text/javascript; charset=utf-8";
const HTML: &str = "text/html; charset=utf-8";

/// `/` and `/ui`: to the UI.
pub(super) async fn to_ui() -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, "/ui/")]).into_response()
}

/// `/ui/`: the page.
pub(super) async fn index() -> Response {
    ([(header::CONTENT_TYPE, HTML)], include_str!("../../ui/index.html")).into_response()
}

/// `/ui/assets/{file}`.
pub(super) async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, kind, body)) => {
            // Served to anyone who can reach the listener: no secret is in them.
            ([(header::CONTENT_TYPE, *kind)], *body).into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}

/// What a browser without a session sees: how to get in, and nothing else.
pub(super) fn login_needed() -> Response {
    (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, HTML)], include_str!("../../ui/login.html")).into_response()
}
