//! `examples/agent.rs` against a scripted local chat endpoint: the model is given the registry
//! in OpenAI's format, asks for a tool, gets its result, and answers.

mod common;

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

/// Answers like a chat model: first a call to `ev__add`, then (seeing the tool's result) text.
async fn chat(State(seen): State<Arc<Mutex<Vec<Value>>>>, Json(body): Json<Value>) -> Json<Value> {
    let round = {
        let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.push(body.clone());
        seen.len()
    };
    if round == 1 {
        return Json(json!({ "choices": [{ "message": { "role": "assistant", "content": null, "tool_calls": [
            { "id": "call_1", "type": "function", "function": { "name": "ev__add", "arguments": "{\"a\": 2, \"b\": 40}" } }
        ] } }] }));
    }
    let tool_result =
        body["messages"].as_array().and_then(|m| m.last()).map(|m| m["content"].clone()).unwrap_or_default();
    Json(
        json!({ "choices": [{ "message": { "role": "assistant", "content": format!("The tool said {}", tool_result.as_str().unwrap_or("?")) } }] }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_gives_the_model_the_registry_and_runs_its_tool_calls() {
    let agent = common::example_of("portico-host", "agent");
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = format!("[gateway]\nstate_dir = \"state\"\n\n{}", common::everything("ev", ""));
    let cfg_path = dir.path().join("portico.toml");
    std::fs::write(&cfg_path, cfg).expect("write");

    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(agent)
            .args([cfg_path.to_str().expect("utf-8"), "What is 2 + 40?"])
            .env("OPENAI_BASE_URL", format!("http://{addr}/v1"))
            .env("OPENAI_MODEL", "scripted")
            .env_remove("OPENAI_API_KEY")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the agent finishes")
    .expect("run agent");
    server.abort();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), "The tool said {\"sum\":42}");

    let seen = seen.lock().expect("seen").clone();
    assert_eq!(seen.len(), 2);
    let tools = seen[0]["tools"].as_array().expect("tools");
    let add = tools.iter().find(|t| t["function"]["name"] == "ev__add").expect("ev__add offered");
    assert_eq!(add["type"], "function");
    assert_eq!(add["function"]["description"], "Adds two integers");
    assert_eq!(add["function"]["parameters"]["required"], json!(["a", "b"]));
    let last = seen[1]["messages"].as_array().and_then(|m| m.last()).expect("tool message");
    assert_eq!((last["role"].as_str(), last["tool_call_id"].as_str()), (Some("tool"), Some("call_1")));
}
