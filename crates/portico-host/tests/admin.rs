//! The admin listener over real HTTP: token, Host and Origin checks, and approvals answered
//! through it while a call waits, a sampling request's with the person's edited params.

use std::time::Duration;

use portico_host::admin::Admin;
use portico_host::approvals::{Approvals, Choice, Pending};
use portico_host::config::Secret;
use serde_json::{Value, json};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

async fn start(approvals: Approvals) -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = format!("[gateway]\nstate_dir = {:?}\n", dir.path().display().to_string());
    let (raw, _) = portico_host::config::parse_toml(&cfg).expect("toml");
    let config =
        portico_host::config::validate(raw, dir.path(), &portico_host::config::expand::Environment).expect("cfg");
    let host = portico_host::Host::start(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let admin = Admin::new(host, approvals, Secret::new(TOKEN), addr);
    let task = tokio::spawn(admin.serve(listener, std::future::pending()));
    (format!("http://{addr}"), task)
}

fn pending() -> Pending {
    serde_json::from_value(json!({
        "id": "", "kind": "call", "server": "fs", "exposed": "fs__write", "original": "write",
        "arguments": {"path": "/tmp/x"}, "reason": "writes", "principal": "local", "client": null,
        "session": 3, "requested_at": 0, "expires_at": 0
    }))
    .expect("pending")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_needs_its_token_and_its_own_host() {
    let (base, server) = start(Approvals::new(Duration::from_secs(60))).await;
    let http = reqwest::Client::new();
    let r = http.get(format!("{base}/approvals")).send().await.expect("send");
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()), Some("Bearer"));
    let r = http.get(format!("{base}/approvals")).bearer_auth("wrong-token-wrong-token").send().await.expect("send");
    assert_eq!(r.status(), 401);
    let r = http.get(format!("{base}/approvals")).bearer_auth(TOKEN).send().await.expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.expect("json"), json!([]));
    // DNS rebinding: a page at evil.example resolving to 127.0.0.1 sends its own Host/Origin.
    let r = http
        .get(format!("{base}/approvals"))
        .bearer_auth(TOKEN)
        .header("host", "evil.example")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 403);
    let r = http
        .get(format!("{base}/approvals"))
        .bearer_auth(TOKEN)
        .header("origin", "http://evil.example")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 403);
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_is_answered_over_http_once() {
    let approvals = Approvals::new(Duration::from_secs(60));
    let (base, server) = start(approvals.clone()).await;
    let a = approvals.clone();
    let waiting = tokio::spawn(async move { a.request(pending(), None).await });
    let http = reqwest::Client::new();
    let first = first_pending(&http, &base).await;
    let id = first["id"].as_str().expect("id").to_owned();
    assert_eq!(first["kind"], "call");
    assert_eq!(first["arguments"], json!({"path": "/tmp/x"}));
    assert!(first["expires_at"].as_u64() > first["requested_at"].as_u64());
    let r = post_answer(&http, &base, &id, json!({"decision": "maybe"})).await;
    assert_eq!(r.status(), 400);
    let r = post_answer(&http, &base, &id, json!({"decision": "deny", "who": "ada"})).await;
    assert_eq!(r.status(), 200);
    let answer = waiting.await.expect("join").expect("answered");
    assert_eq!((answer.choice, answer.channel.as_str(), answer.who.as_str()), (Choice::Deny, "http", "ada"));
    let again = post_answer(&http, &base, &id, json!({"decision": "allow_once"})).await;
    assert_eq!(again.status(), 404, "an answered approval cannot be answered again");
    server.abort();
}

/// `POST /approvals/{id}` with the token.
async fn post_answer(http: &reqwest::Client, base: &str, id: &str, body: Value) -> reqwest::Response {
    http.post(format!("{base}/approvals/{id}")).bearer_auth(TOKEN).json(&body).send().await.expect("send")
}

/// The first pending approval, once there is one.
async fn first_pending(http: &reqwest::Client, base: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let list: Value = http
            .get(format!("{base}/approvals"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            return first.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "nothing came to approve");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_params_are_taken_for_a_sampling_request_only() {
    let approvals = Approvals::new(Duration::from_secs(60));
    let (base, server) = start(approvals.clone()).await;
    let http = reqwest::Client::new();
    let edited = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "edited"}}], "maxTokens": 5});

    // A call: nothing to edit, and it stays pending.
    let a = approvals.clone();
    let call = tokio::spawn(async move { a.request(pending(), None).await });
    let id = first_pending(&http, &base).await["id"].as_str().expect("id").to_owned();
    let r = post_answer(&http, &base, &id, json!({"decision": "allow_once", "params": edited})).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.expect("json");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("not a sampling request")), "{body}");
    assert_eq!(approvals.list().len(), 1, "the call still waits");
    approvals.answer(&id, portico_host::approvals::Answer::now(Choice::Deny, "test", "t")).expect("deny");
    call.await.expect("join").expect("answered");

    // A sampling request: the answer carries the person's params.
    let mut p = pending();
    p.kind = portico_host::approvals::Kind::Sampling;
    p.exposed = "sampling/createMessage".to_owned();
    p.original = "sampling/createMessage".to_owned();
    p.arguments = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "asked"}}], "maxTokens": 5});
    let a = approvals.clone();
    let sampling = tokio::spawn(async move { a.request(p, None).await });
    let shown = first_pending(&http, &base).await;
    assert_eq!(shown["kind"], "sampling");
    let id = shown["id"].as_str().expect("id");
    let r = post_answer(&http, &base, id, json!({"decision": "allow_once", "params": edited})).await;
    assert_eq!(r.status(), 200);
    let answer = sampling.await.expect("join").expect("answered");
    assert_eq!(answer.choice, Choice::AllowOnce);
    assert_eq!(answer.edited, Some(edited));
    server.abort();
}
