//! A handshake-era upstream that asks for input during a call, under a 2026-07-28 client: the
//! client answers with a retry, and the gateway resumes the call it kept waiting, so the
//! upstream's tool runs once and the person is asked once. Before, the retry ran the upstream
//! call again (the first was cancelled), so whatever the tool did before asking was done
//! twice, and a sampling request was put to the person again.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use portico::client::{Client, ClientHandler, EraMode};
use portico::schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams, ElicitRequestParams,
    ElicitResult, ErrorObject, Implementation, RequestedSchema, SamplingMessage, SamplingMessageContentBlock,
    StringSchema, TextContent, Tool, object,
};
use portico::server::{RequestContext, Server};
use portico_host::Host;
use portico_host::approvals::{Answer, Choice, Event, Kind};
use portico_host::audit::{AuditLog, Filter, RawAudit};
use portico_host::gateway::Gateway;
use portico_host::oversight::Supervisor;
use serde_json::{Value, json};

/// The upstream: `order` counts a run, then asks whom to bill; `draft` counts a run, then asks
/// the client's model.
fn upstream(runs: Arc<AtomicUsize>) -> Server {
    let r2 = runs.clone();
    Server::builder(Implementation::new("shop", "1.0.0"))
        .tool(Tool::new("order", object(json!({"type": "object"}))), move |_: Value, cx: RequestContext| {
            let runs = runs.clone();
            async move {
                let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                let form = ElicitRequestFormParams::new(
                    "Bill whom?",
                    RequestedSchema::new().with_required_property("name", StringSchema::new()),
                );
                let a = cx.elicit(ElicitRequestParams::from(form)).await.map_err(|e| e.to_string())?;
                let name = a.content.as_ref().and_then(|c| c.get("name")).and_then(Value::as_str).unwrap_or("?");
                Ok::<_, String>(format!("order {n} billed to {name}"))
            }
        })
        .tool(Tool::new("draft", object(json!({"type": "object"}))), move |_: Value, cx: RequestContext| {
            let runs = r2.clone();
            async move {
                let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                let ask = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("write a haiku")], 100);
                let r = cx.create_message(ask).await.map_err(|e| e.to_string())?;
                let text = serde_json::to_value(&r.content).ok();
                let text = text.as_ref().and_then(|v| v.pointer("/text")).and_then(Value::as_str).unwrap_or("?");
                Ok::<_, String>(format!("draft {n}: {text}"))
            }
        })
        .build()
}

/// The person's client: answers forms with a name and sampling with a fixed text.
#[derive(Clone, Default)]
struct Person {
    forms: Arc<AtomicUsize>,
    samples: Arc<AtomicUsize>,
}

impl ClientHandler for Person {
    fn elicit(&self, _: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        self.forms.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(ElicitResult::accept(json!({ "name": "Ada" }).as_object().cloned().unwrap_or_default())) })
    }

    fn create_message(&self, _: CreateMessageRequestParams) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        self.samples.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            Ok(CreateMessageResult::new(SamplingMessageContentBlock::Text(TextContent::new("old pond")), "m"))
        })
    }
}

/// What a gateway over the shop is watched by.
enum Watch {
    Nothing,
    /// Approvals on the admin API's channel (the test answers them).
    Approvals,
    /// The activity log.
    Log,
}

/// The shop on loopback, and a gateway over it that speaks 2025-11-25 to it and allows tool
/// calls; `extra` goes into the server's table.
struct Shop {
    runs: Arc<AtomicUsize>,
    up: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
    host: Host,
    gateway: Gateway,
    supervisor: Option<Arc<Supervisor>>,
}

async fn shop(watch: Watch, extra: &str) -> Shop {
    let runs = Arc::new(AtomicUsize::new(0));
    let (addr, up) = common::serve_http(upstream(runs.clone())).await;
    let dir = tempfile::tempdir().expect("tmp");
    let head = if matches!(watch, Watch::Approvals) { "[approvals]\nchannels = [\"http\"]\n\n" } else { "" };
    let cfg = format!(
        "{head}[policy.defaults]\ntools = \"allow\"\n\n\
         [servers.shop]\nurl = \"http://{addr}/mcp\"\nprotocol_version = \"2025-11-25\"\n{extra}"
    );
    let config = common::config_in(dir.path(), &cfg);
    let supervisor = match watch {
        Watch::Nothing => None,
        Watch::Approvals => {
            let s = Arc::new(Supervisor::new(&config).expect("supervisor"));
            s.attach_http(true);
            Some(s)
        }
        Watch::Log => {
            let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
            Some(Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log)))
        }
    };
    let host = match &supervisor {
        Some(s) => Host::with_oversight(config, s.clone()),
        None => Host::start(config),
    };
    host.ready(Duration::from_secs(20)).await;
    let gateway = Gateway::new(host.clone());
    gateway.synced(Duration::from_secs(5)).await;
    Shop { runs, up, _dir: dir, host, gateway, supervisor }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_era_upstreams_question_is_answered_by_a_retry_and_its_tool_runs_once() {
    let Shop { runs, up, _dir, host, gateway, supervisor } = shop(Watch::Approvals, "").await;
    let supervisor = supervisor.expect("supervised");

    let person = Person::default();
    let (end, server_end) = portico::transport::memory::pair();
    gateway.server().connect(server_end);
    let caps = ClientCapabilities::new().with_sampling(false).with_elicitation(true, false);
    let client = Client::builder(Implementation::new("agent", "1"))
        .capabilities(caps)
        .handler(person.clone())
        .era(EraMode::Stateless)
        .connect(end)
        .await
        .expect("connect");
    assert!(client.protocol_version().is_stateless());

    let r = client.call_tool("shop__order", json!({})).await.expect("call");
    assert_eq!(common::text(&r), "order 1 billed to Ada", "{r:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the upstream's tool ran once");
    assert_eq!(person.forms.load(Ordering::SeqCst), 1);

    let mut events = supervisor.approvals().subscribe();
    let call = {
        let c = client.clone();
        tokio::spawn(async move { c.call_tool("shop__draft", json!({})).await })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut asked = 0;
    while !call.is_finished() {
        assert!(tokio::time::Instant::now() < deadline, "the call did not end");
        for p in supervisor.approvals().list() {
            if matches!(p.kind, Kind::Sampling | Kind::Result) {
                asked += usize::from(p.kind == Kind::Sampling);
                let _ = supervisor.approvals().answer(&p.id, Answer::now(Choice::AllowOnce, "http", "ada"));
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = call.await.expect("join").expect("call");
    assert_eq!(common::text(&r), "draft 2: old pond", "{r:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the upstream's tool ran once more, not twice");
    assert_eq!(asked, 1);
    let mut sampling_asks = 0;
    while let Ok(e) = events.try_recv() {
        sampling_asks += usize::from(matches!(e, Event::Requested(p) if p.kind == Kind::Sampling));
    }
    assert_eq!(sampling_asks, 1, "the person was asked about the sampling request once");
    assert_eq!(person.samples.load(Ordering::SeqCst), 1, "the client's model was asked once");
    client.close().await;
    host.shutdown().await;
    up.abort();
}

/// The person's client that takes its time: answers forms after `delay`.
#[derive(Clone)]
struct Slow {
    delay: Duration,
}

impl ClientHandler for Slow {
    fn elicit(&self, _: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        let delay = self.delay;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(ElicitResult::accept(json!({ "name": "Ada" }).as_object().cloned().unwrap_or_default()))
        })
    }
}

/// A server's `timeout` bounds the server's silence, not the person's: while the server waits
/// for the answer to its own question, the call's timeout does not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answering_slower_than_the_servers_timeout_does_not_time_the_call_out() {
    let Shop { runs, up, _dir, host, gateway, .. } = shop(Watch::Nothing, "timeout = 1\n").await;
    for era in [EraMode::Handshake(portico::schema::ProtocolVersion::V2025_11_25), EraMode::Stateless] {
        let (end, server_end) = portico::transport::memory::pair();
        gateway.server().connect(server_end);
        let client = Client::builder(Implementation::new("agent", "1"))
            .capabilities(ClientCapabilities::new().with_elicitation(true, false))
            .handler(Slow { delay: Duration::from_millis(2500) })
            .era(era)
            .connect(end)
            .await
            .expect("connect");
        let r = tokio::time::timeout(Duration::from_secs(20), client.call_tool("shop__order", json!({})))
            .await
            .expect("ends")
            .expect("call");
        assert!(common::text(&r).ends_with("billed to Ada"), "{era:?}: {r:?}");
        client.close().await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one run per era");
    host.shutdown().await;
    up.abort();
}

/// A client that never answers: the call stays kept, waiting for a retry that never comes.
struct Silent;

impl ClientHandler for Silent {
    fn elicit(&self, _: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(std::future::pending())
    }
}

/// Stopping does not wait out the grace period for calls kept for a retry: the retry would
/// be refused while stopping, so they end at once, and the upstream's call with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_ends_the_calls_kept_for_a_retry_at_once() {
    let Shop { runs, up, _dir, host, gateway, supervisor } = shop(Watch::Log, "").await;
    let supervisor = supervisor.expect("supervised");
    let (end, server_end) = portico::transport::memory::pair();
    gateway.server().connect(server_end);
    let client = Client::builder(Implementation::new("agent", "1"))
        .capabilities(ClientCapabilities::new().with_elicitation(true, false))
        .handler(Silent)
        .era(EraMode::Stateless)
        .connect(end)
        .await
        .expect("connect");
    let call = {
        let c = client.clone();
        tokio::spawn(async move { c.call_tool("shop__order", json!({})).await })
    };
    let kept = common::eventually(Duration::from_secs(10), || {
        (runs.load(Ordering::SeqCst) == 1 && host.activity().list().len() == 1).then_some(())
    })
    .await;
    assert!(kept.is_some(), "the call reached the upstream and waits");
    // Give the gateway's input-required answer time to go out, so the call is kept.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = tokio::time::Instant::now();
    let drained = gateway.drain(Duration::from_secs(10)).await;
    assert!(started.elapsed() < Duration::from_secs(3), "not the grace period: {:?}", started.elapsed());
    assert_eq!(drained.cancelled, 0, "{drained:?}");
    assert!(host.activity().list().is_empty());
    // Its record is written by the time the drain returns: cancelled, as allowed by policy.
    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let records = log.query(&Filter::new()).await.expect("query");
    let orders: Vec<_> = records.iter().filter(|r| r.target.as_deref() == Some("shop__order")).collect();
    assert_eq!(orders.len(), 1, "{records:?}");
    assert_eq!(orders[0].status, "cancelled", "{:?}", orders[0]);
    call.abort();
    host.shutdown().await;
    up.abort();
}

/// The same over Streamable HTTP: each round is its own POST, so the kept call outlives the
/// response that asked the question, and the retry's response carries the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_the_retry_resumes_the_kept_call() {
    use portico::transport::http::client::HttpClientTransport;
    let Shop { runs, up, _dir, host, gateway, .. } = shop(Watch::Nothing, "").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let endpoint = gateway.http().build();
    let served = tokio::spawn(async move { endpoint.serve_with_shutdown(listener, std::future::pending()).await });
    let person = Person::default();
    let client = Client::builder(Implementation::new("agent", "1"))
        .capabilities(ClientCapabilities::new().with_elicitation(true, false))
        .handler(person.clone())
        .era(EraMode::Stateless)
        .connect(HttpClientTransport::new(url))
        .await
        .expect("connect over HTTP");
    assert!(client.protocol_version().is_stateless());
    for n in 1..=2 {
        let r = tokio::time::timeout(Duration::from_secs(20), client.call_tool("shop__order", json!({})))
            .await
            .expect("ends")
            .expect("call");
        assert_eq!(common::text(&r), format!("order {n} billed to Ada"), "{r:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one upstream run per call");
    assert_eq!(person.forms.load(Ordering::SeqCst), 2);
    client.close().await;
    host.shutdown().await;
    served.abort();
    up.abort();
}
