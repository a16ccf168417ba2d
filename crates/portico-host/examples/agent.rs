//! An agent in a few lines: the host's registry handed to a model through any
//! OpenAI-compatible chat endpoint, tool calls sent down the host's call path.
//!
//! ```sh
//! OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 \
//!   cargo run -p portico-host --example agent -- examples/portico.toml "What is 2 + 40?"
//! ```
//!
//! `OPENAI_BASE_URL` defaults to `https://api.openai.com/v1`; `OPENAI_API_KEY` is sent as a
//! bearer token when set (never printed). The loop ends when the model answers without tool
//! calls, or after 8 rounds.

#![allow(clippy::print_stdout)] // the answer goes to stdout

use std::time::Duration;

use portico::schema::ContentBlock;
use portico_host::{Host, config};
use serde_json::{Value, json};

const MAX_ROUNDS: usize = 8;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(config_path), Some(question)) = (args.next(), args.next()) else {
        eprintln!("usage: agent CONFIG QUESTION");
        std::process::exit(2);
    };
    let base = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".into());
    let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
    let key = std::env::var("OPENAI_API_KEY").ok();

    let host = Host::start(config::load(config_path.as_ref())?.config);
    host.ready(Duration::from_secs(60)).await;
    let tools = host.registry().openai_tools();
    let http = reqwest::Client::new();
    let mut messages = vec![json!({ "role": "user", "content": question })];

    for _ in 0..MAX_ROUNDS {
        let body = json!({ "model": model, "messages": messages, "tools": tools });
        let mut request = http.post(format!("{base}/chat/completions")).json(&body);
        if let Some(key) = &key {
            request = request.bearer_auth(key);
        }
        let reply: Value = request.send().await?.error_for_status()?.json().await?;
        let message = reply["choices"][0]["message"].clone();
        messages.push(message.clone());
        let calls = message["tool_calls"].as_array().cloned().unwrap_or_default();
        if calls.is_empty() {
            println!("{}", message["content"].as_str().unwrap_or_default());
            break;
        }
        for call in calls {
            let name = call["function"]["name"].as_str().unwrap_or_default();
            let arguments: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))?;
            eprintln!("agent: {name} {arguments}");
            let result = host.call_tool(name, arguments, None).await;
            let text: Vec<String> = result
                .content
                .iter()
                .map(|c| match c {
                    ContentBlock::Text(t) => t.text.clone(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                })
                .collect();
            messages.push(json!({ "role": "tool", "tool_call_id": call["id"], "content": text.join("\n") }));
        }
    }
    host.shutdown().await;
    Ok(())
}
