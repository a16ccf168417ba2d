//! The downstream client as an approval channel: an elicitation form in the person's own
//! client, with the four choices. The message names the server and the tool, so a server
//! cannot pose as the host.

use portico::schema::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, RequestedSchema, TitledEnumOption,
    TitledSingleSelectEnumSchema,
};
use portico::server::RequestContext;

use super::{Choice, Kind, Pending};

/// The key of an approval's input request (2026-07-28 `inputRequests`): the same for the same
/// question when a retry asks it again, and different for any other question of the same call
/// (an approval and a later review, or two sampling requests), so one answer never stands for
/// another.
fn key(pending: &Pending) -> String {
    use sha2::{Digest, Sha256};
    let kind = match pending.kind {
        Kind::Call => "call",
        Kind::Result => "result",
        Kind::Sampling => "sampling",
    };
    let mut h = Sha256::new();
    for part in [pending.server.as_bytes(), b"\0", pending.exposed.as_bytes(), b"\0"] {
        h.update(part);
    }
    h.update(serde_json::to_vec(&pending.arguments).unwrap_or_default());
    let digest = h.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("portico-{kind}-{hex}")
}

/// Asks the client of `cx` to decide `pending`; `None` when it declined, cancelled or failed
/// (the approval then waits for another channel).
pub async fn ask_client(cx: &RequestContext, pending: &Pending) -> Option<Choice> {
    let what = match pending.kind {
        Kind::Call => format!("Portico: server `{}` wants to run `{}`", pending.server, pending.original),
        Kind::Result => {
            format!("Portico: review the result of `{}` from server `{}`", pending.original, pending.server)
        }
        Kind::Sampling => format!("Portico: server `{}` asks your model to answer", pending.server),
    };
    let args = serde_json::to_string_pretty(&pending.arguments).unwrap_or_default();
    let mut message = format!("{what} (as `{}`).\n\n{args}", pending.exposed);
    if let Some(reason) = &pending.reason {
        message.push_str(&format!("\n\nWhy you are asked: {reason}"));
    }
    for warning in &pending.warnings {
        message.push_str(&format!("\n\nCareful, about this tool: {warning}"));
    }
    let options = vec![
        TitledEnumOption::new(Choice::AllowOnce.as_str(), "Allow once"),
        TitledEnumOption::new(Choice::AllowSession.as_str(), "Allow for this session"),
        TitledEnumOption::new(Choice::AllowAlways.as_str(), "Always allow"),
        TitledEnumOption::new(Choice::Deny.as_str(), "Deny"),
    ];
    let schema = RequestedSchema::new()
        .with_required_property("decision", TitledSingleSelectEnumSchema::new(options).with_title("Decision"));
    let params = ElicitRequestParams::from(ElicitRequestFormParams::new(message, schema));
    let answer = cx.input(key(pending)).elicit(params).await.ok()?;
    match answer.action {
        ElicitAction::Accept => answer.content.as_ref()?.get("decision")?.as_str().and_then(Choice::parse),
        ElicitAction::Decline => Some(Choice::Deny),
        _ => None,
    }
}
