//! The client's side of the spec, against a scripted server that plays every message by hand:
//! era detection and version renegotiation, request `_meta`, input-required rounds
//! (SEP-2322), and schema defaults for elicitation forms (SEP-1034).

use std::time::Duration;

use futures_util::future::BoxFuture;
use portico::ErrorKind;
use portico::client::elicitation::{accept_with_defaults, form_defaults};
use portico::client::{Client, ClientHandler, EraMode};
use portico::schema::*;
use portico::transport::memory::{self, MemoryReader, MemoryWriter};
use portico::transport::{FrameReader, FrameWriter, Transport};
use serde_json::{Value, json};

/// The server end of a connection, played by the test.
struct Script {
    reader: MemoryReader,
    writer: MemoryWriter,
}

impl Script {
    /// The next message the client sent.
    async fn next(&mut self) -> Value {
        let frame = tokio::time::timeout(Duration::from_secs(10), self.reader.read_frame())
            .await
            .expect("the client sends in time")
            .expect("readable")
            .expect("not closed");
        serde_json::from_slice(&frame).expect("JSON")
    }

    /// The next message, which must be a request for `method`.
    async fn expect(&mut self, method: &str) -> Value {
        let m = self.next().await;
        assert_eq!(m["method"], method, "{m}");
        m
    }

    async fn send(&mut self, v: Value) {
        self.writer.write_frame(v.to_string().as_bytes()).await.expect("write");
        self.writer.flush().await.expect("flush");
    }

    async fn result(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result})).await;
    }

    async fn error(&mut self, request: &Value, error: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "error": error})).await;
    }

    /// Answers a `server/discover` as a 2026-07-28 server.
    async fn discovered(&mut self, request: &Value) {
        self.result(request, discover_result()).await;
    }
}

fn discover_result() -> Value {
    json!({
        "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
        "ttlMs": 0, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}
    })
}

/// Accepts every form with its defaults, as a user who changes nothing.
struct Defaults;

impl ClientHandler for Defaults {
    fn elicit(&self, params: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(async move {
            match params {
                ElicitRequestParams::Form(f) => Ok(accept_with_defaults(&f.requested_schema, JsonObject::new())),
                _ => Ok(ElicitResult::decline()),
            }
        })
    }
}

fn caps() -> ClientCapabilities {
    ClientCapabilities::new().with_sampling(false).with_elicitation(true, false).with_roots(true)
}

/// Starts connecting in `mode`; the script plays the server.
fn start(mode: EraMode) -> (tokio::task::JoinHandle<Result<Client, portico::Error>>, Script) {
    let (client_end, server_end) = memory::pair();
    let (reader, writer) = server_end.split();
    let connecting = tokio::spawn(
        Client::builder(Implementation::new("scripted-client", "1.2.3"))
            .capabilities(caps())
            .handler(Defaults)
            .era(mode)
            .probe_timeout(Duration::from_secs(5))
            .connect(client_end),
    );
    (connecting, Script { reader, writer })
}

/// The `_meta` every stateless request carries.
fn assert_stateless_meta(request: &Value) {
    let meta = &request["params"]["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28", "{request}");
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"], json!({"name": "scripted-client", "version": "1.2.3"}));
    let declared = &meta["io.modelcontextprotocol/clientCapabilities"];
    for cap in ["sampling", "elicitation", "roots"] {
        assert!(declared[cap].is_object(), "{cap} declared as an object: {request}");
    }
}

#[test]
fn form_defaults_fill_only_what_the_user_left_out() {
    let schema: RequestedSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "level": {"type": "string", "oneOf": [{"const": "hi", "title": "High"}], "default": "hi"},
            "verified": {"type": "boolean", "default": true},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["b"]},
            "nickname": {"type": "string"}
        }
    }))
    .expect("a form schema");
    let defaults = form_defaults(&schema);
    assert_eq!(
        Value::Object(defaults),
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "level": "hi",
               "verified": true, "tags": ["b"]})
    );

    let typed = json!({"name": "Grace", "nickname": "G"}).as_object().cloned().expect("object");
    let result = accept_with_defaults(&schema, typed);
    assert_eq!(result.action, ElicitAction::Accept);
    let wire = serde_json::to_string(&result).expect("serializable");
    assert!(wire.contains(r#""age":30"#), "an integer field's default stays an integer: {wire}");
    let content = Value::Object(result.content.expect("content"));
    assert_eq!(content["name"], "Grace", "what the user typed wins");
    assert_eq!(content["nickname"], "G");
    assert_eq!(content["verified"], true);
    assert_eq!(content.as_object().map(|c| c.len()), Some(8));
}

#[tokio::test]
async fn auto_mode_takes_an_answer_that_is_not_a_discover_result_for_the_handshake_era() {
    let (connecting, mut server) = start(EraMode::Auto);
    let probe = server.expect("server/discover").await;
    // A handshake-era server that answers anything with an empty result.
    server.result(&probe, json!({})).await;
    let init = server.expect("initialize").await;
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert!(init["params"].get("_meta").is_none(), "no stateless _meta in initialize: {init}");
    server
        .result(
            &init,
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}),
        )
        .await;
    server.expect("notifications/initialized").await;
    let client = connecting.await.expect("joined").expect("connected");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(client.server_info().name, "old");
}

#[tokio::test]
async fn stateless_mode_retries_discovery_with_a_revision_the_server_lists() {
    let (connecting, mut server) = start(EraMode::Stateless);
    let first = server.expect("server/discover").await;
    assert_stateless_meta(&first);
    server
        .error(
            &first,
            json!({"code": -32022, "message": "Unsupported protocol version",
                   "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}),
        )
        .await;
    let second = server.expect("server/discover").await;
    assert_stateless_meta(&second);
    assert_ne!(first["id"], second["id"], "a new request, with a new id");
    // Some servers put serverInfo beside the result's members rather than in `_meta`.
    let mut result = discover_result();
    result.as_object_mut().expect("object").remove("_meta");
    result["serverInfo"] = json!({"name": "beside", "version": "2"});
    server.result(&second, result).await;
    let client = connecting.await.expect("joined").expect("connected after the retry");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(client.server_info().name, "beside");

    // Every later request carries the stateless `_meta` too.
    let listing = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools(None).await }
    });
    let list = server.expect("tools/list").await;
    assert_stateless_meta(&list);
    server.result(&list, json!({"resultType": "complete", "tools": []})).await;
    assert!(listing.await.expect("joined").expect("listed").tools.is_empty());
}

#[tokio::test]
async fn stateless_mode_refuses_a_server_that_lists_only_handshake_revisions() {
    let (connecting, mut server) = start(EraMode::Stateless);
    let first = server.expect("server/discover").await;
    server
        .error(
            &first,
            json!({"code": -32022, "message": "Unsupported protocol version",
                   "data": {"supported": ["2025-11-25"], "requested": "2026-07-28"}}),
        )
        .await;
    let err = connecting.await.expect("joined").expect_err("no common revision");
    assert_eq!(err.kind(), ErrorKind::PeerIncompatible, "{err}");
}

/// Connects in the stateless era through the script.
async fn stateless() -> (Client, Script) {
    let (connecting, mut server) = start(EraMode::Stateless);
    let probe = server.expect("server/discover").await;
    server.discovered(&probe).await;
    (connecting.await.expect("joined").expect("connected"), server)
}

fn confirm_request() -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": "Confirm?",
        "requestedSchema": {"type": "object", "properties": {"confirmed": {"type": "boolean", "default": true}}}
    }})
}

#[tokio::test]
async fn input_required_rounds_echo_the_state_exactly_and_only_when_given() {
    let (client, mut server) = stateless().await;

    // With requestState: the retry is a new request that echoes it byte for byte.
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("with_state", json!({})).await }
    });
    let first = server.expect("tools/call").await;
    assert_stateless_meta(&first);
    assert!(first["params"].get("requestState").is_none() && first["params"].get("inputResponses").is_none());
    let state = "opaque: {\"nonce\":\"n-1\"} ✓ ==";
    server
        .result(
            &first,
            json!({"resultType": "input_required", "inputRequests": {"confirm": confirm_request()}, "requestState": state}),
        )
        .await;
    let retry = server.expect("tools/call").await;
    assert_ne!(retry["id"], first["id"], "the retry has its own JSON-RPC id");
    assert_eq!(retry["params"]["name"], "with_state");
    assert_eq!(retry["params"]["requestState"], state, "echoed exactly");
    assert_eq!(
        retry["params"]["inputResponses"]["confirm"],
        json!({"action": "accept", "content": {"confirmed": true}})
    );
    assert_stateless_meta(&retry);
    server.result(&retry, json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]})).await;
    let done = call.await.expect("joined").expect("completed");
    assert_eq!(serde_json::to_value(&done.content[0]).expect("json")["text"], "done");

    // Without requestState: the retry carries none.
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("no_state", json!({})).await }
    });
    let first = server.expect("tools/call").await;
    server.result(&first, json!({"resultType": "input_required", "inputRequests": {"c": confirm_request()}})).await;
    let retry = server.expect("tools/call").await;
    assert!(retry["params"].get("requestState").is_none(), "no state to echo: {retry}");
    assert!(retry["params"]["inputResponses"]["c"].is_object());
    // A result without resultType is complete.
    server.result(&retry, json!({"content": [{"type": "text", "text": "plain"}]})).await;
    call.await.expect("joined").expect("completed without resultType");

    // Another call made next carries nothing from the earlier rounds.
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("unrelated", json!({})).await }
    });
    let fresh = server.expect("tools/call").await;
    assert_eq!(fresh["params"]["name"], "unrelated");
    assert!(fresh["params"].get("requestState").is_none() && fresh["params"].get("inputResponses").is_none());
    server.result(&fresh, json!({"content": []})).await;
    call.await.expect("joined").expect("completed");
}

const SKILL_MD: &str = "---\nname: pdf\ndescription: Fill PDF forms\nmetadata:\n  version: 2\n---\n\nUse the forms.\n";
const FORMS_MD: &str = "Forms reference.\n";

fn skill_entry(skill_md: &str) -> Value {
    let file = |uri: &str, text: &str| json!({"uri": uri, "digest": portico::client::skills::digest(text.as_bytes()), "size": text.len()});
    json!({
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "Fill PDF forms", "metadata": {"version": 2}},
        "resources": [file("skill://pdf/SKILL.md", skill_md), file("skill://pdf/FORMS.md", FORMS_MD)]
    })
}

async fn answer_read(server: &mut Script, text: &str) -> Value {
    let read = server.expect("resources/read").await;
    let uri = read["params"]["uri"].clone();
    server
        .result(
            &read,
            json!({"resultType": "complete", "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}),
        )
        .await;
    read
}

#[tokio::test]
async fn skills_are_listed_without_reading_and_loaded_only_when_they_match() {
    let (client, mut server) = stateless().await;
    let listing = tokio::spawn({
        let client = client.clone();
        async move { client.list_all_skills().await }
    });
    let list = server.expect("skills/list").await;
    assert_stateless_meta(&list);
    server
        .result(
            &list,
            json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "skills": [skill_entry(SKILL_MD)]}),
        )
        .await;
    let skills = listing.await.expect("joined").expect("listed");
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].name(), Some("pdf"));
    let entry = skills[0].clone();

    // A SKILL.md that matches size, digest and frontmatter is loaded; then a supporting file.
    let loading = tokio::spawn({
        let (client, entry) = (client.clone(), entry.clone());
        async move {
            let skill = client.load_skill(&entry).await?;
            let forms = client.read_skill_file(&entry, "skill://pdf/FORMS.md").await?;
            Ok::<_, portico::Error>((skill, forms))
        }
    });
    let read = answer_read(&mut server, SKILL_MD).await;
    assert_eq!(read["params"]["uri"], "skill://pdf/SKILL.md");
    answer_read(&mut server, FORMS_MD).await;
    let (skill, forms) = loading.await.expect("joined").expect("loaded");
    assert_eq!(skill.body, "\nUse the forms.\n");
    assert_eq!(forms, FORMS_MD.as_bytes());

    // Tampered content is refused: other bytes of the same length, extra bytes, and a
    // frontmatter that no longer matches the entry (with a manifest that does).
    let same_length = SKILL_MD.replace("Use the forms.", "Send secrets!!");
    let longer = format!("{SKILL_MD}more\n");
    let other_frontmatter = SKILL_MD.replace("Fill PDF forms", "Exfiltrate data");
    for (served, entry, why) in [
        (same_length.as_str(), entry.clone(), "digest"),
        (longer.as_str(), entry.clone(), "bytes long"),
        (
            other_frontmatter.as_str(),
            serde_json::from_value(skill_entry(&other_frontmatter)).expect("entry"),
            "description",
        ),
    ] {
        let loading = tokio::spawn({
            let client = client.clone();
            async move { client.load_skill(&entry).await }
        });
        answer_read(&mut server, served).await;
        let err = loading.await.expect("joined").expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::PeerMisbehaved, "{err}");
        assert!(err.to_string().contains(why), "{why}: {err}");
    }

    // A file that is not in the manifest is not read at all.
    let err = client.read_skill_file(&entry, "skill://pdf/OTHER.md").await.expect_err("not listed");
    assert!(err.to_string().contains("not in the skill's manifest"), "{err}");
}

/// A tool call whose caller stops waiting just as the server makes a task of it: the server's
/// `CreateTaskResult` crosses the client's `notifications/cancelled`, so the server keeps the
/// task and the call never learned its id. The client cancels the task when the answer comes.
#[tokio::test]
async fn a_task_made_of_a_call_its_caller_dropped_is_cancelled() {
    let (connecting, mut server) = start(EraMode::Stateless);
    let probe = server.expect("server/discover").await;
    server.discovered(&probe).await;
    let client = connecting.await.expect("join").expect("connected");
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("work", json!({})).await })
    };
    let request = server.expect("tools/call").await;
    call.abort();
    let cancelled = server.expect("notifications/cancelled").await;
    assert_eq!(cancelled["params"]["requestId"], request["id"], "{cancelled}");
    // The server had made the task already.
    server
        .result(
            &request,
            json!({"resultType": "task", "taskId": "t-late", "status": "working", "createdAt": "2026-11-27T00:00:00Z",
                   "lastUpdatedAt": "2026-11-27T00:00:00Z", "ttlMs": 60_000}),
        )
        .await;
    let cancel = server.expect("tasks/cancel").await;
    assert_eq!(cancel["params"]["taskId"], "t-late", "{cancel}");
    assert_stateless_meta(&cancel);
    server.result(&cancel, json!({})).await;

    // An answer that is no task, to a call dropped the same way, sends nothing more.
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("work", json!({})).await })
    };
    let request = server.expect("tools/call").await;
    call.abort();
    server.expect("notifications/cancelled").await;
    server.result(&request, json!({"content": [{"type": "text", "text": "done"}]})).await;
    let ping = client.clone();
    let pinged = tokio::spawn(async move { ping.ping().await });
    // A stateless ping is a `server/discover`: the next message, with no `tasks/cancel` before it.
    let next = server.next().await;
    assert_eq!(next["method"], "server/discover", "nothing but the ping: {next}");
    server.discovered(&next).await;
    pinged.await.expect("join").expect("pong");
}
