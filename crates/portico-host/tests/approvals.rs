//! Approvals end to end through the gateway: a real downstream client (Portico's, in the
//! 2026-07-28 era, answering an input-required result; and in the handshake era, answering an
//! elicitation request) decides allow once / for the session / always / deny.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico::client::{Client, ClientHandler, EraMode};
use portico::schema::{
    ClientCapabilities, ElicitRequestParams, ElicitResult, ErrorObject, Implementation, ProtocolVersion,
};
use portico_host::Host;
use portico_host::gateway::Gateway;
use portico_host::oversight::Supervisor;
use serde_json::json;

/// Answers every approval form with the next scripted decision and remembers what it was asked.
#[derive(Clone, Default)]
struct Person {
    answers: Arc<Mutex<Vec<&'static str>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Person {
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(async move {
            let message = match &params {
                ElicitRequestParams::Form(f) => f.message.clone(),
                #[allow(unreachable_patterns)]
                _ => String::new(),
            };
            self.asked.lock().expect("asked").push(message);
            let decision = self.answers.lock().expect("answers").remove(0);
            Ok(ElicitResult::accept(json!({ "decision": decision }).as_object().cloned().unwrap_or_default()))
        })
    }
}

async fn client(gateway: &Gateway, person: Person, era: EraMode) -> Client {
    let (client_end, server_end) = portico::transport::memory::pair();
    gateway.server().connect(server_end);
    Client::builder(Implementation::new("person's client", "1.0.0"))
        .capabilities(ClientCapabilities::new().with_elicitation(true, false))
        .handler(person)
        .era(era)
        .connect(client_end)
        .await
        .expect("connect")
}

async fn gateway(dir: &std::path::Path) -> (Host, Gateway) {
    let config = common::config_in(dir, &common::everything("ev", ""));
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor"));
    let host = Host::with_oversight(config, supervisor);
    host.ready(Duration::from_secs(60)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    (host, gateway)
}

fn answers(person: &Person, list: &[&'static str]) {
    person.answers.lock().expect("answers").extend_from_slice(list);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_from_the_calling_client_in_both_eras() {
    for era in [EraMode::Stateless, EraMode::Handshake(ProtocolVersion::V2025_11_25)] {
        let dir = tempfile::tempdir().expect("tmp");
        let (host, gw) = gateway(dir.path()).await;
        let person = Person::default();
        let c = client(&gw, person.clone(), era).await;

        // Deny: the tool never runs; the model gets a tool error that says who denied it.
        answers(&person, &["deny"]);
        let r = c.call_tool("ev__add", json!({"a": 1, "b": 2})).await.expect("call");
        assert_eq!(r.is_error, Some(true), "{era:?}");
        assert!(common::text(&r).contains("denied by"), "{era:?}: {}", common::text(&r));
        let asked = person.asked.lock().expect("asked").clone();
        assert!(
            asked[0].contains("server `ev`") && asked[0].contains("`add`"),
            "the form names server and tool: {asked:?}"
        );

        // Once: this call runs; the next one asks again.
        answers(&person, &["allow_once", "allow_session"]);
        let r = c.call_tool("ev__add", json!({"a": 1, "b": 2})).await.expect("call");
        assert_eq!(r.structured_content, Some(json!({"sum": 3})), "{era:?}");
        // For the session: asked once more, then not again in this session.
        let r = c.call_tool("ev__add", json!({"a": 2, "b": 2})).await.expect("call");
        assert_eq!(r.structured_content, Some(json!({"sum": 4})));
        let before = person.asked.lock().expect("asked").len();
        let r = c.call_tool("ev__add", json!({"a": 3, "b": 2})).await.expect("call");
        assert_eq!(r.structured_content, Some(json!({"sum": 5})));
        assert_eq!(person.asked.lock().expect("asked").len(), before, "{era:?}: the session answer holds");

        // Another session of the same client is asked again (and says always).
        let other = Person::default();
        answers(&other, &["allow_always"]);
        let c2 = client(&gw, other.clone(), era).await;
        let r = c2.call_tool("ev__add", json!({"a": 1, "b": 1})).await.expect("call");
        assert_eq!(r.structured_content, Some(json!({"sum": 2})));
        assert_eq!(other.asked.lock().expect("asked").len(), 1, "a session answer does not cross sessions");
        // Always: stored, so a third session is not asked.
        let third = Person::default();
        let c3 = client(&gw, third.clone(), era).await;
        let r = c3.call_tool("ev__add", json!({"a": 5, "b": 5})).await.expect("call");
        assert_eq!(r.structured_content, Some(json!({"sum": 10})));
        assert!(third.asked.lock().expect("asked").is_empty(), "an always answer is kept");
        assert!(dir.path().join("state/policy-always.json").exists());
        for c in [c, c2, c3] {
            c.close().await;
        }
        host.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_forms_is_refused_at_once_not_left_hanging() {
    let dir = tempfile::tempdir().expect("tmp");
    let (host, gw) = gateway(dir.path()).await;
    let (client_end, server_end) = portico::transport::memory::pair();
    gw.server().connect(server_end);
    let c = Client::builder(Implementation::new("plain", "1.0.0")).connect(client_end).await.expect("connect");
    let started = std::time::Instant::now();
    let r = c.call_tool("ev__add", json!({"a": 1, "b": 2})).await.expect("call");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.is_error, Some(true));
    assert!(common::text(&r).contains("needs a person's approval"), "{}", common::text(&r));
    c.close().await;
    host.shutdown().await;
}
