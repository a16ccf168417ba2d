//! An upstream's own requests through oversight: a sampling request is `ask` by default; the
//! person sees it, may edit it, and sees the completion before it goes back; an elicitation
//! carries the asking server's name; each is recorded in the activity log.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico::client::{Client, ClientHandler, EraMode};
use portico::schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ErrorObject, Implementation, ProtocolVersion, SamplingMessageContentBlock, TextContent,
};
use portico_host::Host;
use portico_host::approvals::{Answer, Choice, Event, Kind};
use portico_host::audit::{AuditLog, Filter, RawAudit};
use portico_host::gateway::Gateway;
use portico_host::oversight::Supervisor;
use serde_json::{Value, json};

/// The client's model: answers with what it was asked, so a test sees which messages reached it.
#[derive(Clone, Default)]
struct Model {
    prompts: Arc<Mutex<Vec<String>>>,
    elicited: Arc<Mutex<Vec<String>>>,
}

fn first_text(params: &CreateMessageRequestParams) -> String {
    let v = serde_json::to_value(&params.messages).unwrap_or(Value::Null);
    v.pointer("/0/content/text").and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl ClientHandler for Model {
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        let text = first_text(&params);
        self.prompts.lock().expect("prompts").push(text.clone());
        Box::pin(async move {
            Ok(CreateMessageResult::new(
                SamplingMessageContentBlock::Text(TextContent::new(format!("saw: {text}"))),
                "m",
            ))
        })
    }

    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        self.elicited.lock().expect("elicited").push(params.message().to_owned());
        Box::pin(async { Ok(ElicitResult::accept(json!({ "name": "Ada" }).as_object().cloned().unwrap_or_default())) })
    }
}

async fn connect(gateway: &Gateway, model: Model, caps: ClientCapabilities) -> Client {
    connect_in(gateway, model, caps, EraMode::Handshake(ProtocolVersion::V2025_11_25)).await
}

async fn connect_in(gateway: &Gateway, model: Model, caps: ClientCapabilities, era: EraMode) -> Client {
    let (client_end, server_end) = portico::transport::memory::pair();
    gateway.server().connect(server_end);
    Client::builder(Implementation::new("agent", "1.0.0"))
        .capabilities(caps)
        .handler(model)
        .era(era)
        .connect(client_end)
        .await
        .expect("connect")
}

async fn supervised(dir: &std::path::Path) -> (Arc<Supervisor>, Host, Gateway) {
    // The admin API answers; the client's forms are for the upstream's own elicitations.
    let policy = "[approvals]\nchannels = [\"http\"]\n\n[[policy.rules]]\ntool = \"ev__*\"\ndecision = \"allow\"\n\n";
    let config = common::config_in(dir, &format!("{policy}{}", common::everything("ev", "")));
    let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log));
    supervisor.attach_http(true);
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(60)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    (supervisor, host, gateway)
}

/// Answers the next pending approval of `kind` as `answer` says, returning what it showed.
async fn decide(supervisor: &Supervisor, kind: Kind, answer: impl FnOnce(&Value) -> Answer) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(p) = supervisor.approvals().list().into_iter().find(|p| p.kind == kind) {
            let a = answer(&p.arguments);
            supervisor.approvals().answer(&p.id, a).expect("answered");
            return p.arguments;
        }
        assert!(tokio::time::Instant::now() < deadline, "no pending {kind:?} approval came");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn text(r: &portico::schema::CallToolResult) -> String {
    common::text(r)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_is_asked_edited_reviewed_and_recorded_and_elicitation_names_its_server() {
    let dir = tempfile::tempdir().expect("tmp");
    let (supervisor, host, gateway) = supervised(dir.path()).await;
    let model = Model::default();
    let c = connect(&gateway, model.clone(), ClientCapabilities::new().with_sampling(false)).await;
    let mut events = supervisor.approvals().subscribe();

    // Asked, edited, completion passed: the model saw the edited message.
    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.call_tool("ev__summarize", json!({ "text": "secret plans" })).await })
    };
    let shown = decide(&supervisor, Kind::Sampling, |params| {
        let mut edited = params.clone();
        edited["messages"][0]["content"]["text"] = json!("a harmless question");
        Answer::now(Choice::AllowOnce, "http", "ada").with_edited(edited)
    })
    .await;
    assert!(
        shown.pointer("/messages/0/content/text").and_then(Value::as_str).is_some_and(|t| t.contains("secret plans")),
        "the person sees the upstream's messages: {shown}"
    );
    assert_eq!(shown["maxTokens"], json!(100), "and its parameters: {shown}");
    let completion = decide(&supervisor, Kind::Result, |_| Answer::now(Choice::AllowOnce, "http", "ada")).await;
    assert_eq!(completion.pointer("/content/text"), Some(&json!("saw: a harmless question")), "{completion}");
    let r = tokio::time::timeout(Duration::from_secs(20), call).await.expect("ends").expect("join").expect("call");
    assert_eq!(text(&r), "saw: a harmless question", "{r:?}");
    assert_eq!(model.prompts.lock().expect("prompts").as_slice(), ["a harmless question"]);
    let mut saw_sampling_event = false;
    while let Ok(e) = events.try_recv() {
        saw_sampling_event |= matches!(e, Event::Requested(p) if p.kind == Kind::Sampling && p.server == "ev");
    }
    assert!(saw_sampling_event, "live views see the sampling request");

    // Completion withheld: the upstream gets an error, the model of the caller saw the request.
    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.call_tool("ev__summarize", json!({ "text": "second" })).await })
    };
    decide(&supervisor, Kind::Sampling, |_| Answer::now(Choice::AllowOnce, "http", "ada")).await;
    decide(&supervisor, Kind::Result, |_| Answer::now(Choice::Deny, "http", "ada")).await;
    let r = tokio::time::timeout(Duration::from_secs(20), call).await.expect("ends").expect("join").expect("call");
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("withheld"), "{}", text(&r));

    // Denied: the model is never asked.
    let before = model.prompts.lock().expect("prompts").len();
    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.call_tool("ev__summarize", json!({ "text": "third" })).await })
    };
    decide(&supervisor, Kind::Sampling, |_| Answer::now(Choice::Deny, "http", "ada")).await;
    let r = tokio::time::timeout(Duration::from_secs(20), call).await.expect("ends").expect("join").expect("call");
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("refused") && text(&r).contains("denied by ada"), "{}", text(&r));
    assert_eq!(model.prompts.lock().expect("prompts").len(), before, "a denied request never reaches the model");

    // Edits are for sampling requests only.
    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.call_tool("ev__summarize", json!({ "text": "fourth" })).await })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let p = loop {
        if let Some(p) = supervisor.approvals().list().into_iter().find(|p| p.kind == Kind::Sampling) {
            break p;
        }
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    supervisor.approvals().answer(&p.id, Answer::now(Choice::AllowSession, "http", "ada")).expect("session");
    decide(&supervisor, Kind::Result, |_| Answer::now(Choice::AllowOnce, "http", "ada")).await;
    let r = tokio::time::timeout(Duration::from_secs(20), call).await.expect("ends").expect("join").expect("call");
    assert_eq!(text(&r), "saw: Summarize in one line:\nfourth");

    // Elicitation: allowed by default, and the person sees which server asks.
    let asker = Model::default();
    let c2 = connect(&gateway, asker.clone(), ClientCapabilities::new().with_elicitation(true, false)).await;
    let r = c2.call_tool("ev__greet_user", json!({})).await.expect("call");
    assert_eq!(text(&r), "Hello, Ada!");
    let elicited = asker.elicited.lock().expect("elicited").clone();
    assert_eq!(elicited, ["[server `ev` asks] What is your name?"]);

    // Every request from the upstream is recorded, with what the model actually got.
    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let records = log.query(&Filter::new()).await.expect("query");
    let sampling: Vec<_> = records.iter().filter(|r| r.method == "sampling/createMessage").collect();
    assert_eq!(sampling.len(), 4, "{:?}", records.iter().map(|r| &r.method).collect::<Vec<_>>());
    let first = sampling[0].json();
    assert_eq!(first["server"], json!("ev"), "{first}");
    assert_eq!(first["policy.decision"], json!("ask"), "sampling is asked about by default: {first}");
    let args = first.to_string();
    assert!(args.contains("a harmless question") && !args.contains("secret plans"), "the edited request: {first}");
    assert_eq!(sampling[0].status, "success");
    assert_eq!(sampling[1].status, "denied", "the withheld completion");
    assert_eq!(sampling[2].status, "denied");
    assert_eq!(records.iter().filter(|r| r.method == "elicitation/create").count(), 1);
    assert!(log.verify().await.expect("verify").first_bad_seq().is_none());
    c.close().await;
    c2.close().await;
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_2026_07_28_an_upstreams_input_requests_pass_through_and_the_person_is_asked_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let (supervisor, host, gateway) = supervised(dir.path()).await;
    let model = Model::default();
    let caps = ClientCapabilities::new().with_sampling(false).with_elicitation(true, false);
    let c = connect_in(&gateway, model.clone(), caps, EraMode::Stateless).await;
    assert!(c.protocol_version().is_stateless());
    let mut events = supervisor.approvals().subscribe();

    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.call_tool("ev__summarize", json!({ "text": "secret plans" })).await })
    };
    decide(&supervisor, Kind::Sampling, |params| {
        let mut edited = params.clone();
        edited["messages"][0]["content"]["text"] = json!("a harmless question");
        Answer::now(Choice::AllowOnce, "http", "ada").with_edited(edited)
    })
    .await;
    let completion = decide(&supervisor, Kind::Result, |_| Answer::now(Choice::AllowOnce, "http", "ada")).await;
    assert_eq!(completion.pointer("/content/text"), Some(&json!("saw: a harmless question")), "{completion}");
    let r = tokio::time::timeout(Duration::from_secs(20), call).await.expect("ends").expect("join").expect("call");
    assert_eq!(text(&r), "saw: a harmless question", "{r:?}");
    assert_eq!(model.prompts.lock().expect("prompts").as_slice(), ["a harmless question"], "asked once");
    let mut sampling_asks = 0;
    while let Ok(e) = events.try_recv() {
        sampling_asks += usize::from(matches!(e, Event::Requested(p) if p.kind == Kind::Sampling));
    }
    assert_eq!(sampling_asks, 1, "the retry does not put the same request to the person again");

    // An elicitation through input-required rounds, named for its server.
    let r = c.call_tool("ev__greet_user", json!({})).await.expect("call");
    assert_eq!(text(&r), "Hello, Ada!");
    assert_eq!(model.elicited.lock().expect("elicited").as_slice(), ["[server `ev` asks] What is your name?"]);

    // Roots: the client has none declared, so the configured ones answer (none here).
    let r = c.call_tool("ev__roots", json!({})).await.expect("call");
    assert_ne!(r.is_error, Some(true), "{r:?}");

    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let records = log.query(&Filter::new()).await.expect("query");
    let methods: Vec<&str> = records.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods.iter().filter(|m| **m == "sampling/createMessage").count(), 1, "{methods:?}");
    assert_eq!(methods.iter().filter(|m| **m == "elicitation/create").count(), 1, "{methods:?}");
    c.close().await;
    host.shutdown().await;
}
