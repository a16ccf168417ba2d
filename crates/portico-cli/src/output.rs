//! What the verbs print: tables for people, JSON with `--json`.
#![allow(clippy::print_stdout)]

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use portico::schema::{
    CallToolResult, ContentBlock, GetPromptResult, ProgressNotificationParams, ReadResourceResult, ResourceContents,
    Tool,
};
use portico_host::upstream::UpstreamStatus;
use serde_json::Value;

fn json_out(v: &impl serde::Serialize) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("portico: cannot encode the output: {e}"),
    }
}

/// Prints rows as columns padded to their widest cell.
fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header.iter().map(|h| (*h).to_owned()).collect());
    for row in rows {
        line(row.clone());
    }
}

fn one_line(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or("");
    if first.chars().count() > max {
        format!("{}…", first.chars().take(max - 1).collect::<String>())
    } else {
        first.to_owned()
    }
}

pub(crate) fn servers(statuses: &[UpstreamStatus], json: bool) {
    if json {
        return json_out(&statuses);
    }
    let rows: Vec<Vec<String>> = statuses
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.kind.to_owned(),
                s.state.as_str().to_owned(),
                s.protocol_version.clone().unwrap_or_else(|| "-".into()),
                s.tools.to_string(),
                s.restarts.to_string(),
                s.last_error.as_deref().map_or_else(|| "-".into(), |e| one_line(e, 60)),
            ]
        })
        .collect();
    table(&["SERVER", "KIND", "STATE", "REVISION", "TOOLS", "RESTARTS", "LAST ERROR"], &rows);
}

pub(crate) fn direct_server(row: &Value, json: bool) {
    if json {
        return json_out(row);
    }
    let s = |k: &str| row.get(k).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)).unwrap_or_default();
    table(&["SERVER", "VERSION", "REVISION", "PID"], &[vec![s("name"), s("version"), s("protocol_version"), s("pid")]]);
}

pub(crate) fn tools(tools: &[(Tool, Option<String>)], json: bool) {
    if json {
        let list: Vec<&Tool> = tools.iter().map(|(t, _)| t).collect();
        return json_out(&list);
    }
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|(t, server)| {
            vec![
                t.name.clone(),
                server.clone().unwrap_or_else(|| "-".into()),
                one_line(t.description.as_deref().or(t.title.as_deref()).unwrap_or(""), 70),
            ]
        })
        .collect();
    table(&["TOOL", "SERVER", "DESCRIPTION"], &rows);
}

pub(crate) fn call_result(result: &CallToolResult, json: bool) {
    if json {
        return json_out(result);
    }
    for block in &result.content {
        print_block(block);
    }
    if let Some(structured) = &result.structured_content
        && result.content.is_empty()
    {
        json_out(structured);
    }
}

fn print_block(block: &ContentBlock) {
    match block {
        ContentBlock::Text(t) => println!("{}", t.text),
        ContentBlock::Image(i) => println!("[image {}, {} bytes base64]", i.mime_type, i.data.len()),
        ContentBlock::Audio(a) => println!("[audio {}, {} bytes base64]", a.mime_type, a.data.len()),
        ContentBlock::ResourceLink(l) => println!("[resource link {} ({})]", l.uri, l.name),
        ContentBlock::Resource(r) => print_contents(&r.resource),
        #[allow(unreachable_patterns)]
        other => json_out(other),
    }
}

fn print_contents(c: &ResourceContents) {
    match c {
        ResourceContents::Text(t) => println!("{}", t.text),
        ResourceContents::Blob(b) => println!("[blob {}, {} bytes base64]", b.uri, b.blob.len()),
        #[allow(unreachable_patterns)]
        other => json_out(other),
    }
}

pub(crate) fn read_result(result: &ReadResourceResult, json: bool) {
    if json {
        return json_out(result);
    }
    for c in &result.contents {
        print_contents(c);
    }
}

pub(crate) fn prompt_result(result: &GetPromptResult, json: bool) {
    if json {
        return json_out(result);
    }
    if let Some(d) = &result.description {
        println!("# {d}");
    }
    for m in &result.messages {
        print!("{:?}: ", m.role);
        print_block(&m.content);
    }
}

/// A spinner on stderr with the upstream's latest progress message, when stderr is a terminal.
pub(crate) struct Spinner {
    message: Arc<Mutex<String>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Spinner {
    pub(crate) fn start(what: &str) -> Spinner {
        let message = Arc::new(Mutex::new(String::new()));
        let task = std::io::stderr().is_terminal().then(|| {
            let message = message.clone();
            let what = what.to_owned();
            tokio::spawn(async move {
                // Only a call that takes a while gets a spinner.
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
                let paused = crate::inspect::paused();
                for i in 0usize.. {
                    if paused.load(std::sync::atomic::Ordering::SeqCst) {
                        tokio::time::sleep(std::time::Duration::from_millis(80)).await;
                        continue;
                    }
                    let text = message.lock().map(|m| m.clone()).unwrap_or_default();
                    eprint!("\r\x1b[2K{} {what} {text}", frames[i % frames.len()]);
                    tokio::time::sleep(std::time::Duration::from_millis(80)).await;
                }
            })
        });
        Spinner { message, task }
    }

    /// A progress callback that updates the spinner's message.
    pub(crate) fn sink(&self) -> impl Fn(ProgressNotificationParams) + Send + Sync + 'static {
        let message = self.message.clone();
        move |p| {
            let text = match (p.message, p.total) {
                (Some(m), _) => m,
                (None, Some(total)) => format!("{}/{}", p.progress, total),
                (None, None) => p.progress.to_string(),
            };
            if let Ok(mut m) = message.lock() {
                *m = text;
            }
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            eprint!("\r\x1b[2K");
        }
    }
}
