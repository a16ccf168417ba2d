//! `raw-echo`: the ceiling the bench server is compared with.
//!
//! A single-threaded, blocking line echo over stdin/stdout that speaks just enough
//! JSON-RPC for the driver's `seq` and `pipe*` workloads: every request line is parsed
//! (borrowed, no tree), and answered with a fixed, valid response carrying the same `id`
//! and, for `tools/call`, the echoed `arguments.text`. `initialize` gets a fixed result;
//! notifications get nothing. A request with the 2026-07-28 `_meta` is answered as that
//! revision asks (`server/discover`, stamped results): see [`portico_bench::floor`]. Output is flushed only when the input buffer is drained, so
//! a pipelined burst is answered with one write.

use std::io::{self, BufRead, BufReader, BufWriter, Write};

use portico_bench::floor::answer;

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
