//! `raw-echo`: the ceiling the bench server is compared with.
//!
//! A single-threaded, blocking line echo over stdin/stdout that speaks just enough
//! JSON-RPC for the driver's `seq` and `pipe*` workloads: every request line is parsed
//! (borrowed, no tree), and answered with a fixed, valid response carrying the same `id`
//! and, for `tools/call`, the echoed `arguments.text`. `initialize` gets a fixed result;
//! notifications get nothing. Output is flushed only when the input buffer is drained, so
//! a pipelined burst is answered with one write.

use std::borrow::Cow;
use std::io::{self, BufRead, BufReader, BufWriter, Write};

use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    arguments: Option<Arguments<'a>>,
}

#[derive(Deserialize)]
struct Arguments<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

const INIT_RESULT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw-echo","version":"0.0.0"}}"#;

fn main() -> io::Result<()> {
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    let mut input = BufReader::with_capacity(256 * 1024, stdin);
    let mut output = BufWriter::with_capacity(256 * 1024, stdout);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            output.flush()?;
            return Ok(());
        }
        let text = trim_line(&line);
        if !text.is_empty() {
            answer(text, &mut output)?;
        }
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

fn answer(line: &[u8], out: &mut impl Write) -> io::Result<()> {
    let request: Request<'_> = match serde_json::from_slice(line) {
        Ok(request) => request,
        Err(e) => {
            let message = serde_json::to_string(&format!("parse error: {e}"))?;
            return writeln!(out, r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32700,"message":{message}}}}}"#);
        }
    };
    let Some(id) = request.id else {
        return Ok(()); // a notification
    };
    out.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
    out.write_all(id.get().as_bytes())?;
    match request.method.as_ref() {
        "initialize" => {
            out.write_all(br#","result":"#)?;
            out.write_all(INIT_RESULT.as_bytes())?;
        }
        "ping" => out.write_all(br#","result":{}"#)?,
        "tools/call" => {
            let text = request.params.and_then(|p| p.arguments).and_then(|a| a.text).unwrap_or(Cow::Borrowed(""));
            out.write_all(br#","result":{"content":[{"type":"text","text":"#)?;
            serde_json::to_writer(&mut *out, text.as_ref())?;
            out.write_all(b"}]}")?;
        }
        _ => out.write_all(br#","error":{"code":-32601,"message":"method not found"}"#)?,
    }
    out.write_all(b"}\n")
}
