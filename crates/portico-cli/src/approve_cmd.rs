//! `portico approve`: the pending approvals of a running gateway, answered from a terminal
//! through its admin API (`portico serve --admin`).
//!
//! Interactive by default: each pending approval is shown in turn (oldest first) with keys for
//! the four choices; `--watch` keeps waiting for new ones. `--json` lists them; `ID --decision D`
//! answers one without asking.
// An interactive command: its dialogue is on stdout.
#![allow(clippy::print_stdout)]

use std::io::{BufRead, Write};
use std::time::Duration;

use clap::{Args, ValueEnum};
use futures_util::StreamExt;
use portico_host::approvals::{Choice, Pending};
use serde_json::{Value, json};

use crate::Failure;

/// `portico approve`.
#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// Answer this approval (with `--decision`) instead of asking.
    id: Option<String>,
    /// The answer for ID.
    #[arg(long, value_enum, requires = "id")]
    decision: Option<Decision>,
    /// The gateway's admin listener; default: the config's `[admin] listen`, or 127.0.0.1:8766.
    #[arg(long, value_name = "ADDR")]
    admin: Option<String>,
    /// The admin token; default: the config's `[admin] token`, or `admin-token` in its state
    /// directory.
    #[arg(long, env = "PORTICO_ADMIN_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Keep waiting for new approvals after the pending ones (Ctrl-C or end of input stops).
    #[arg(long)]
    watch: bool,
    /// Print the pending approvals as JSON and exit.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Decision {
    AllowOnce,
    AllowSession,
    AllowAlways,
    Deny,
}

impl Decision {
    fn choice(self) -> Choice {
        match self {
            Decision::AllowOnce => Choice::AllowOnce,
            Decision::AllowSession => Choice::AllowSession,
            Decision::AllowAlways => Choice::AllowAlways,
            Decision::Deny => Choice::Deny,
        }
    }
}

/// The admin API of one running gateway.
struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    async fn pending(&self) -> Result<Vec<Pending>, Failure> {
        let r = self.http.get(format!("{}/approvals", self.base)).bearer_auth(&self.token).send().await;
        let r = checked(r).await?;
        r.json().await.map_err(|e| Failure::Unavailable(format!("the admin API's answer: {e}")))
    }

    async fn answer(&self, id: &str, choice: Choice) -> Result<bool, Failure> {
        let who = std::env::var("USER").unwrap_or_else(|_| "terminal".to_owned());
        let r = self
            .http
            .post(format!("{}/approvals/{id}", self.base))
            .bearer_auth(&self.token)
            .json(&json!({ "decision": choice.as_str(), "who": who }))
            .send()
            .await
            .map_err(|e| Failure::Unavailable(format!("cannot reach the admin API at {}: {e}", self.base)))?;
        if r.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(false);
        }
        checked(Ok(r)).await?;
        Ok(true)
    }
}

async fn checked(r: Result<reqwest::Response, reqwest::Error>) -> Result<reqwest::Response, Failure> {
    let r = r.map_err(|e| {
        Failure::Unavailable(format!("cannot reach the admin API: {e} (is `portico serve --admin` running?)"))
    })?;
    if r.status().is_success() {
        return Ok(r);
    }
    let status = r.status();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    let why = body.get("error").and_then(Value::as_str).unwrap_or("no reason given").to_owned();
    Err(Failure::Unavailable(format!("the admin API refused ({status}): {why}")))
}

pub(crate) async fn run(config: Option<&std::path::Path>, args: ApproveArgs) -> Result<(), Failure> {
    let api = connect(config, &args)?;
    if let (Some(id), Some(decision)) = (&args.id, args.decision) {
        return if api.answer(id, decision.choice()).await? {
            println!("{id}: {}", decision.choice().as_str());
            Ok(())
        } else {
            Err(Failure::Usage(format!("no pending approval `{id}` (it may have been answered already)")))
        };
    }
    if args.id.is_some() {
        return Err(Failure::Usage("give the answer with --decision".to_owned()));
    }
    let pending = api.pending().await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&pending).unwrap_or_default());
        return Ok(());
    }
    let mut input = Lines::stdin();
    if pending.is_empty() && !args.watch {
        println!("nothing waits for approval");
        return Ok(());
    }
    let mut seen = std::collections::HashSet::new();
    for p in pending {
        seen.insert(p.id.clone());
        if !ask(&api, &p, &mut input).await? {
            return Ok(());
        }
    }
    if args.watch {
        watch(&api, &mut input, seen).await?;
    }
    Ok(())
}

/// The address and token: flags first, then the config's `[admin]` and state directory.
fn connect(config: Option<&std::path::Path>, args: &ApproveArgs) -> Result<Api, Failure> {
    // With both flags no config is needed; otherwise the config is found as for `serve`.
    let loaded = if args.admin.is_some() && args.token.is_some() {
        None
    } else {
        let path = crate::config_path(config)?;
        Some(portico_host::config::load(&path).map_err(|e| Failure::Usage(e.to_string()))?)
    };
    let addr = match (&args.admin, &loaded) {
        (Some(a), _) => a.clone(),
        (None, Some(l)) => l.config.admin.listen.to_string(),
        (None, None) => "127.0.0.1:8766".to_owned(),
    };
    let token = match (&args.token, &loaded) {
        (Some(t), _) => t.clone(),
        (None, Some(l)) => portico_host::admin::token(&l.config)
            .map_err(|e| Failure::Usage(format!("the admin token: {e}")))?
            .expose()
            .to_owned(),
        (None, None) => {
            return Err(Failure::Usage("no admin token: give --token, PORTICO_ADMIN_TOKEN or --config".to_owned()));
        }
    };
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| Failure::Usage(format!("http client: {e}")))?;
    Ok(Api { http, base: format!("http://{addr}"), token })
}

/// Lines typed at the terminal, read off the async runtime.
struct Lines {
    rx: tokio::sync::mpsc::Receiver<String>,
}

impl Lines {
    fn stdin() -> Lines {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        Lines { rx }
    }

    async fn next(&mut self) -> Option<String> {
        self.rx.recv().await
    }

    /// Input has ended and every line was read.
    fn ended(&self) -> bool {
        self.rx.is_closed() && self.rx.is_empty()
    }
}

/// Shows `p` and answers it as typed; `false` when the person quit or input ended.
async fn ask(api: &Api, p: &Pending, input: &mut Lines) -> Result<bool, Failure> {
    let what = match p.kind {
        portico_host::approvals::Kind::Result => "review the result of",
        portico_host::approvals::Kind::Sampling => "let through the sampling request",
        _ => "run",
    };
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "\n[{}] {} ({}) wants to {what} `{}` on server `{}`",
        p.id,
        p.principal,
        p.client.as_deref().unwrap_or("no client"),
        p.exposed,
        p.server
    );
    let _ = writeln!(out, "{}", serde_json::to_string_pretty(&p.arguments).unwrap_or_default());
    if let Some(reason) = &p.reason {
        let _ = writeln!(out, "Why you are asked: {reason}");
    }
    for warning in &p.warnings {
        let _ = writeln!(out, "Careful, about this tool: {warning}");
    }
    loop {
        let _ = write!(out, "[o]nce  [s]ession  [a]lways  [d]eny  s[k]ip  [q]uit? ");
        let _ = out.flush();
        let Some(line) = input.next().await else { return Ok(false) };
        let choice = match line.trim() {
            "o" | "once" => Choice::AllowOnce,
            "s" | "session" => Choice::AllowSession,
            "a" | "always" => Choice::AllowAlways,
            "d" | "deny" => Choice::Deny,
            "k" | "skip" => return Ok(true),
            "q" | "quit" => return Ok(false),
            _ => continue,
        };
        if api.answer(&p.id, choice).await? {
            let _ = writeln!(out, "{}: {}", p.id, choice.as_str());
        } else {
            let _ = writeln!(out, "{}: already answered elsewhere, expired or withdrawn", p.id);
        }
        return Ok(true);
    }
}

/// Asks each approval as it arrives, from the live event stream.
async fn watch(api: &Api, input: &mut Lines, mut seen: std::collections::HashSet<String>) -> Result<(), Failure> {
    println!("waiting for approvals (Ctrl-C to stop)");
    let r = api.http.get(format!("{}/approvals/events", api.base)).bearer_auth(&api.token).send().await;
    let r = checked(r).await?;
    let mut body = r.bytes_stream();
    let mut buf = String::new();
    // A bound on one event's size: the stream is the gateway's, but memory stays bounded.
    const MAX_EVENT: usize = 4 << 20;
    loop {
        let chunk = tokio::select! {
            chunk = body.next() => match chunk {
                Some(chunk) => chunk,
                None => return Ok(()),
            },
            // Nobody is left to answer once input has ended.
            () = tokio::time::sleep(Duration::from_millis(200)) => {
                if input.ended() {
                    return Ok(());
                }
                continue;
            }
        };
        let chunk = chunk.map_err(|e| Failure::Unavailable(format!("the event stream ended: {e}")))?;
        buf.push_str(&String::from_utf8_lossy(&chunk));
        if buf.len() > MAX_EVENT {
            return Err(Failure::Unavailable("an event from the admin API was too large".to_owned()));
        }
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            let data: String = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect::<Vec<_>>()
                .join("\n");
            let Ok(v) = serde_json::from_str::<Value>(&data) else { continue };
            if v.get("event").and_then(Value::as_str) != Some("requested") {
                continue;
            }
            // The stream opens with the pending ones (`approval`), then events carry it inline.
            let Ok(p) = serde_json::from_value::<Pending>(v.get("approval").cloned().unwrap_or(v)) else {
                continue;
            };
            if !seen.insert(p.id.clone()) {
                continue;
            }
            if !ask(api, &p, input).await? {
                return Ok(());
            }
        }
    }
}
