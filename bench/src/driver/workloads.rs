//! The workloads. Each runs for a given time against a connected server, verifies every
//! response, and records latencies (nanoseconds) into a histogram.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::Notify;

use crate::conn::{Conn, Lines, Watch};
use crate::proto::{
    self, CallResult, ListResult, Parsed, ReadResult, Template, echo_request, excerpt, parse, verify_echo,
};

pub fn histogram() -> Histogram<u64> {
    // 1 ns .. 100 s at 3 significant figures.
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

#[inline]
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What a measured run did: calls completed and the time from the first request written to
/// the last response read.
pub struct Run {
    pub calls: u64,
    pub elapsed: Duration,
    pub note: String,
}

/// Reads lines until the response to `id`, skipping notifications; returns when it arrived.
async fn await_echo(conn: &mut Conn, id: u64) -> Result<Instant, String> {
    loop {
        conn.read_line().await?;
        let at = Instant::now();
        match parse::<CallResult<'_>>(conn.r.line())? {
            Parsed::Notification => continue,
            Parsed::Result(got, result) if got == id => {
                verify_echo(id, &result)?;
                return Ok(at);
            }
            Parsed::Result(got, _) => {
                return Err(format!("waiting for response {id}, got {got}: {}", excerpt(conn.r.line())));
            }
        }
    }
}

/// `seq`: one echo in flight at a time.
pub async fn seq(conn: &mut Conn, duration: Duration, hist: &mut Histogram<u64>) -> Result<Run, String> {
    conn.watch.active.store(true, Ordering::Relaxed);
    let start = Instant::now();
    let deadline = start + duration;
    let mut calls = 0;
    let mut last = start;
    loop {
        let id = conn.next_id();
        conn.out.clear();
        echo_request(&mut conn.out, id, conn.meta.as_deref());
        let sent = Instant::now();
        if sent >= deadline {
            break;
        }
        conn.send_out().await?;
        last = await_echo(conn, id).await?;
        hist.saturating_record(nanos(last - sent));
        calls += 1;
    }
    conn.watch.active.store(false, Ordering::Relaxed);
    Ok(Run { calls, elapsed: last - start, note: String::new() })
}

/// State shared by the pipelined writer and reader.
struct Pipe<'m> {
    meta: Option<&'m str>,
    window: u64,
    mask: u64,
    first_id: u64,
    base: Instant,
    /// Per ring slot: the id in flight there, or `FREE`.
    ids: Box<[AtomicU64]>,
    /// Per ring slot: when its request was written (ns since `base`).
    sent_at: Box<[AtomicU64]>,
    /// Responses read so far, published by the reader whenever its buffer runs out of lines.
    completed: AtomicU64,
    /// The number of requests the writer sends in all, once it knows (else `u64::MAX`).
    total: AtomicU64,
    /// Set by the reader on failure so the writer gives up.
    stop: AtomicBool,
    /// Reader → writer: room in the window.
    room: Notify,
}

const FREE: u64 = u64::MAX;

/// `pipe<N>`: keeps `window` echoes in flight.
///
/// The writer fills the window, writes the batch with one flush and sleeps until the reader
/// reports progress. The reader publishes progress each time its buffer holds no further
/// complete line (that is, before it would block), so a burst of responses frees the window
/// in one go and the next batch is again one write. Both run in this task (`join!`), so the
/// driver costs one thread. Responses may come in any order: each is matched to its ring slot.
pub async fn pipe(conn: &mut Conn, window: u64, duration: Duration, hist: &mut Histogram<u64>) -> Result<Run, String> {
    let ring = (window * 4).next_power_of_two();
    let meta = conn.meta.clone();
    let pipe = Pipe {
        meta: meta.as_deref(),
        window,
        mask: ring - 1,
        first_id: conn.take_ids(0),
        base: Instant::now(),
        ids: (0..ring).map(|_| AtomicU64::new(FREE)).collect(),
        sent_at: (0..ring).map(|_| AtomicU64::new(0)).collect(),
        completed: AtomicU64::new(0),
        total: AtomicU64::new(u64::MAX),
        stop: AtomicBool::new(false),
        room: Notify::new(),
    };
    conn.watch.active.store(true, Ordering::Relaxed);
    let deadline = pipe.base + duration;
    let (w, out, r, watch) = (&mut conn.w, &mut conn.out, &mut conn.r, &conn.watch);
    let (written, read) = tokio::join!(
        async {
            let r = pipe_writer(&pipe, w, out, deadline).await;
            if r.is_err() {
                pipe.stop.store(true, Ordering::Relaxed);
            }
            r
        },
        async {
            let r = pipe_reader(&pipe, r, watch, hist).await;
            if r.is_err() {
                pipe.stop.store(true, Ordering::Relaxed);
                pipe.room.notify_one();
            }
            r
        }
    );
    conn.watch.active.store(false, Ordering::Relaxed);
    let (calls, last) = read.map_err(|e| conn.closed(e))?;
    let sent = written.map_err(|e| conn.closed(e))?;
    conn.take_ids(sent);
    Ok(Run { calls, elapsed: last, note: String::new() })
}

async fn pipe_writer(
    pipe: &Pipe<'_>,
    w: &mut BufWriter<ChildStdin>,
    out: &mut Vec<u8>,
    deadline: Instant,
) -> Result<u64, String> {
    let mut sent = 0u64;
    let mut last = false;
    loop {
        if pipe.stop.load(Ordering::Relaxed) {
            return Ok(sent);
        }
        let now = Instant::now();
        if !last && now >= deadline {
            // One more request, then stop; the reader stops when it has them all.
            last = true;
            pipe.total.store(sent + 1, Ordering::Release);
        }
        let in_flight = sent - pipe.completed.load(Ordering::Acquire);
        let mut room = if last { 1 } else { pipe.window.saturating_sub(in_flight) };
        let at = nanos(now - pipe.base);
        out.clear();
        let mut batch = 0;
        while room > 0 {
            let id = pipe.first_id + sent;
            let slot = (id & pipe.mask) as usize;
            if pipe.ids[slot].load(Ordering::Acquire) != FREE {
                break; // a straggler still holds this slot
            }
            pipe.sent_at[slot].store(at, Ordering::Relaxed);
            pipe.ids[slot].store(id, Ordering::Release);
            echo_request(out, id, pipe.meta);
            sent += 1;
            room -= 1;
            batch += 1;
        }
        if batch > 0 {
            w.write_all(out).await.map_err(|e| format!("write to the server failed: {e}"))?;
            w.flush().await.map_err(|e| format!("flush to the server failed: {e}"))?;
            if last {
                return Ok(sent);
            }
        }
        pipe.room.notified().await;
    }
}

async fn pipe_reader(
    pipe: &Pipe<'_>,
    r: &mut Lines<ChildStdout>,
    watch: &Watch,
    hist: &mut Histogram<u64>,
) -> Result<(u64, Duration), String> {
    let mut completed = 0u64;
    loop {
        r.read_line().await?;
        let now = pipe.base.elapsed();
        match parse::<CallResult<'_>>(r.line())? {
            Parsed::Notification => {}
            Parsed::Result(id, result) => {
                let slot = (id & pipe.mask) as usize;
                if id < pipe.first_id || pipe.ids[slot].load(Ordering::Acquire) != id {
                    return Err(format!("response to id {id}, which is not in flight (never sent, or answered twice)"));
                }
                verify_echo(id, &result)?;
                let sent_at = pipe.sent_at[slot].load(Ordering::Relaxed);
                pipe.ids[slot].store(FREE, Ordering::Release);
                hist.saturating_record(nanos(now).saturating_sub(sent_at));
                completed += 1;
                if completed == pipe.total.load(Ordering::Acquire) {
                    pipe.completed.store(completed, Ordering::Release);
                    return Ok((completed, now));
                }
            }
        }
        if !r.has_line() {
            pipe.completed.store(completed, Ordering::Release);
            pipe.room.notify_one();
            watch.tick();
        }
    }
}

/// `hol`: one `sleep 1000 ms` in flight while sequential echoes run for 0.9 s, `rounds` times.
/// The sleep must answer `ok`, no earlier than 1000 ms, and after the echoes.
pub async fn hol(conn: &mut Conn, rounds: u32, hist: &mut Histogram<u64>) -> Result<Run, String> {
    const SLEEP: Duration = Duration::from_millis(1000);
    const ECHOES_FOR: Duration = Duration::from_millis(900);
    conn.watch.active.store(true, Ordering::Relaxed);
    let mut calls = 0;
    let mut busy = Duration::ZERO;
    let mut sleep_took = Vec::new();
    for _ in 0..rounds {
        let sleep_id = conn.next_id();
        conn.out.clear();
        proto::request(
            &mut conn.out,
            sleep_id,
            "tools/call",
            Some(&format!(r#"{{"name":"sleep","arguments":{{"ms":{}}}}}"#, SLEEP.as_millis())),
            conn.meta.as_deref(),
        );
        let slept = Instant::now();
        conn.send_out().await?;
        let deadline = slept + ECHOES_FOR;
        let mut last = slept;
        loop {
            let id = conn.next_id();
            conn.out.clear();
            echo_request(&mut conn.out, id, conn.meta.as_deref());
            let sent = Instant::now();
            if sent >= deadline {
                break;
            }
            conn.send_out().await?;
            loop {
                conn.read_line().await?;
                let at = Instant::now();
                match parse::<CallResult<'_>>(conn.r.line())? {
                    Parsed::Notification => continue,
                    Parsed::Result(got, result) if got == id => {
                        verify_echo(id, &result)?;
                        last = at;
                        break;
                    }
                    Parsed::Result(got, _) if got == sleep_id => {
                        return Err(format!(
                            "the sleep answered after {:?} while echo {id} (sent at {:?}) was still waiting: \
                             requests are served one at a time (head-of-line blocking)",
                            at - slept,
                            sent - slept
                        ));
                    }
                    Parsed::Result(got, _) => return Err(format!("waiting for response {id}, got {got}")),
                }
            }
            hist.saturating_record(nanos(last - sent));
            calls += 1;
        }
        busy += last - slept;
        loop {
            conn.read_line().await?;
            match parse::<CallResult<'_>>(conn.r.line())? {
                Parsed::Notification => continue,
                Parsed::Result(got, result) if got == sleep_id => {
                    let took = slept.elapsed();
                    let text = result.content.0.as_ref().and_then(|c| c.text.as_deref());
                    if text != Some("ok") || result.is_error == Some(true) {
                        return Err(format!(
                            "sleep returned {text:?} (isError {:?}), expected \"ok\"",
                            result.is_error
                        ));
                    }
                    if took < SLEEP {
                        return Err(format!("sleep {} ms answered after only {took:?}", SLEEP.as_millis()));
                    }
                    sleep_took.push(took);
                    break;
                }
                Parsed::Result(got, _) => {
                    return Err(format!("waiting for the sleep's response {sleep_id}, got {got}"));
                }
            }
        }
    }
    conn.watch.active.store(false, Ordering::Relaxed);
    let max_took = sleep_took.iter().max().copied().unwrap_or_default();
    Ok(Run {
        calls,
        elapsed: busy,
        note: format!("{rounds} round(s); slowest sleep(1000 ms) answered in {:.1} ms", max_took.as_secs_f64() * 1e3),
    })
}

/// How many answers a workload recognised as byte-identical to a verified one (`fast`) and how
/// many it parsed and checked (`full`).
#[derive(Default, Clone, Copy)]
pub struct Checks {
    pub fast: u64,
    pub full: u64,
}

impl Checks {
    fn note(&self) -> String {
        format!(
            "{} of {} answers byte-identical to the verified first but for the id (fast check)",
            self.fast,
            self.fast + self.full
        )
    }
}

/// The listing `verify_tools` checked in depth: its tool count, and per page what later pages
/// are recognised by.
pub struct Listing {
    pub tools: usize,
    pages: Vec<Page>,
}

/// One page of the verified listing.
struct Page {
    /// The cursor that was sent for it (`None` for the first page).
    cursor: Option<String>,
    /// Its response line, if its id could be located.
    template: Option<Template>,
    tools: usize,
    next_cursor: Option<String>,
}

/// Lists every tool, following cursors; returns (tools, pages, tools on the first page).
///
/// A page whose cursor and response line (but for the id) are those of the same page of the
/// verified listing is taken as that page; any other is parsed for its count and cursor.
async fn list_all(conn: &mut Conn, listing: &Listing, checks: &mut Checks) -> Result<(usize, u32, usize), String> {
    let mut cursor: Option<String> = None;
    let mut tools = 0;
    let mut pages = 0;
    let mut first_page = 0;
    loop {
        let id = conn.next_id();
        conn.out.clear();
        let params = cursor.as_ref().map(|c| serde_json::json!({ "cursor": c }).to_string());
        proto::request(&mut conn.out, id, "tools/list", params.as_deref(), conn.meta.as_deref());
        conn.send_out().await?;
        let reference = listing.pages.get(pages as usize).filter(|p| p.cursor == cursor);
        let (count, next) = loop {
            conn.read_line().await?;
            if let Some(page) = reference
                && page.template.as_ref().is_some_and(|t| t.matches(conn.r.line(), id))
            {
                checks.fast += 1;
                break (page.tools, page.next_cursor.clone());
            }
            match parse::<ListResult<'_>>(conn.r.line())? {
                Parsed::Notification => continue,
                Parsed::Result(got, result) if got == id => {
                    checks.full += 1;
                    break (result.tools.0, result.next_cursor.map(Cow::into_owned));
                }
                Parsed::Result(got, _) => return Err(format!("waiting for response {id}, got {got}")),
            }
        };
        if pages == 0 {
            first_page = count;
        }
        tools += count;
        pages += 1;
        match next {
            Some(next) if pages < 10_000 => cursor = Some(next),
            Some(_) => return Err("tools/list gave more than 10000 pages".to_owned()),
            None => return Ok((tools, pages, first_page)),
        }
    }
}

/// Untimed: one full listing checked in depth (names, descriptions, schemas); its pages are
/// kept to recognise later listings by.
pub async fn verify_tools(conn: &mut Conn) -> Result<Listing, String> {
    let mut cursor: Option<String> = None;
    let mut names = std::collections::HashSet::new();
    let mut pages = Vec::new();
    loop {
        let id = conn.next_id();
        conn.out.clear();
        let params = cursor.as_ref().map(|c| serde_json::json!({ "cursor": c }).to_string());
        proto::request(&mut conn.out, id, "tools/list", params.as_deref(), conn.meta.as_deref());
        conn.send_out().await?;
        conn.watch.active.store(true, Ordering::Relaxed);
        let result = loop {
            conn.read_line().await?;
            match parse::<&serde_json::value::RawValue>(conn.r.line())? {
                Parsed::Notification => continue,
                Parsed::Result(got, result) if got == id => {
                    break serde_json::from_str::<serde_json::Value>(result.get()).map_err(|e| e.to_string())?;
                }
                Parsed::Result(got, _) => return Err(format!("waiting for response {id}, got {got}")),
            }
        };
        conn.watch.active.store(false, Ordering::Relaxed);
        let template = Template::new(conn.r.line(), id);
        let tools = result.get("tools").and_then(|t| t.as_array()).ok_or("tools/list result has no tools array")?;
        for tool in tools {
            let name =
                tool.get("name").and_then(|n| n.as_str()).ok_or_else(|| format!("a tool without a name: {tool}"))?;
            if tool.pointer("/inputSchema/type").and_then(|t| t.as_str()) != Some("object") {
                return Err(format!("tool {name} has no object inputSchema"));
            }
            if name.starts_with("noop_") {
                let description = tool.get("description").and_then(|d| d.as_str()).unwrap_or("");
                let properties = tool.pointer("/inputSchema/properties").and_then(|p| p.as_object());
                if description.len() < 50 || properties.map(|p| p.len()) != Some(2) {
                    return Err(format!("tool {name}: expected a ~100-character description and 2 properties: {tool}"));
                }
            }
            if !names.insert(name.to_owned()) {
                return Err(format!("tool {name} listed twice"));
            }
        }
        let next_cursor = result.get("nextCursor").and_then(|c| c.as_str()).map(str::to_owned);
        pages.push(Page { cursor: cursor.take(), template, tools: tools.len(), next_cursor: next_cursor.clone() });
        match next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    for name in ["echo", "sleep"].into_iter().map(str::to_owned).chain((0..1000).map(|i| format!("noop_{i}"))) {
        if !names.contains(&name) {
            return Err(format!("tools/list lacks {name}"));
        }
    }
    Ok(Listing { tools: names.len(), pages })
}

/// `list`: full tool listings, one after another. Each must have as many tools as the listing
/// `verify_tools` checked; pages byte-identical to that listing's (but for the id) are not parsed.
pub async fn list(
    conn: &mut Conn,
    duration: Duration,
    listing: &Listing,
    hist: &mut Histogram<u64>,
) -> Result<Run, String> {
    let expect = listing.tools;
    let mut checks = Checks::default();
    conn.watch.active.store(true, Ordering::Relaxed);
    let start = Instant::now();
    let deadline = start + duration;
    let mut calls = 0;
    let mut last = start;
    let mut shape = (0, 0);
    while Instant::now() < deadline {
        let sent = Instant::now();
        let (tools, pages, first_page) = list_all(conn, listing, &mut checks).await?;
        last = Instant::now();
        if first_page < 1000 && pages == 1 {
            return Err(format!("tools/list returned {first_page} tools, expected at least 1000"));
        }
        if tools != expect {
            return Err(format!("tools/list returned {tools} tools in all, the verified listing had {expect}"));
        }
        shape = (pages, first_page);
        hist.saturating_record(nanos(last - sent));
        calls += 1;
    }
    conn.watch.active.store(false, Ordering::Relaxed);
    Ok(Run {
        calls,
        elapsed: last - start,
        note: format!("{expect} tools in {} page(s) of up to {}; {}", shape.0, shape.1, checks.note()),
    })
}

pub const BLOB_BYTES: usize = 1_048_576;

/// Checks a blob: exactly `BLOB_BYTES` characters, and every window of 64 characters holds a
/// `"`, a `\` and a newline.
fn verify_blob(text: &str) -> Result<(), String> {
    let chars = text.chars().count();
    if chars != BLOB_BYTES {
        return Err(format!("blob has {chars} characters, expected {BLOB_BYTES}"));
    }
    let bytes = text.as_bytes();
    for needle in [b'"', b'\\', b'\n'] {
        // Windows of 64 characters (ASCII: bytes) all hold `needle` iff it first appears within
        // the first 64, consecutive appearances are at most 64 apart, and it last appears within
        // the last 64.
        let mut prev: Option<usize> = None;
        for at in memchr::memchr_iter(needle, bytes) {
            let gap_ok = match prev {
                None => at < 64,
                Some(p) => at - p <= 64,
            };
            if !gap_ok {
                return Err(format!("blob: no {:?} within 64 characters before offset {at}", needle as char));
            }
            prev = Some(at);
        }
        match prev {
            Some(p) if bytes.len() - p <= 64 => {}
            _ => return Err(format!("blob: {:?} missing from the last 64 characters", needle as char)),
        }
    }
    if !text.is_ascii() {
        return Err("blob is not ASCII: character windows were checked as bytes".to_owned());
    }
    Ok(())
}

/// The first blob read, checked in full.
pub struct Blob {
    /// Its text, unescaped.
    text: String,
    /// Its response line, if its id could be located.
    template: Option<Template>,
}

/// `blob`: `resources/read` of `bench://blob/1048576`, one after another. The first answer is
/// checked in full; every later one must be byte-identical to it (the blob is deterministic):
/// an answer whose line is the first one's but for the id is so without being parsed, any other
/// is parsed and its text compared with the first text.
pub async fn blob(
    conn: &mut Conn,
    duration: Duration,
    reference: &mut Option<Blob>,
    hist: &mut Histogram<u64>,
) -> Result<Run, String> {
    let params = format!(r#"{{"uri":"bench://blob/{BLOB_BYTES}"}}"#);
    let mut checks = Checks::default();
    conn.watch.active.store(true, Ordering::Relaxed);
    let start = Instant::now();
    let deadline = start + duration;
    let mut calls = 0;
    let mut last = start;
    while Instant::now() < deadline {
        let id = conn.next_id();
        conn.out.clear();
        proto::request(&mut conn.out, id, "resources/read", Some(&params), conn.meta.as_deref());
        let sent = Instant::now();
        conn.send_out().await?;
        loop {
            conn.read_line().await?;
            last = Instant::now();
            if let Some(Blob { template: Some(t), .. }) = reference
                && t.matches(conn.r.line(), id)
            {
                checks.fast += 1;
                break;
            }
            match parse::<ReadResult<'_>>(conn.r.line())? {
                Parsed::Notification => continue,
                Parsed::Result(got, result) if got == id => {
                    let Some(text) = result.contents.0.and_then(|c| c.text) else {
                        return Err("resources/read returned no text contents[0]".to_owned());
                    };
                    checks.full += 1;
                    match reference {
                        Some(r) if r.text == text => {}
                        Some(_) => {
                            verify_blob(&text)?;
                            return Err("the blob differs from the first one read (not deterministic)".to_owned());
                        }
                        None => {
                            verify_blob(&text)?;
                            let text = text.into_owned();
                            *reference = Some(Blob { text, template: Template::new(conn.r.line(), id) });
                        }
                    }
                    break;
                }
                Parsed::Result(got, _) => return Err(format!("waiting for response {id}, got {got}")),
            }
        }
        hist.saturating_record(nanos(last - sent));
        calls += 1;
    }
    conn.watch.active.store(false, Ordering::Relaxed);
    Ok(Run { calls, elapsed: last - start, note: checks.note() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob() -> Vec<u8> {
        let mut b = vec![b'x'; BLOB_BYTES];
        for chunk in b.chunks_exact_mut(64) {
            chunk[5] = b'"';
            chunk[30] = b'\\';
            chunk[63] = b'\n';
        }
        b
    }

    #[test]
    fn blob_check_wants_every_window_of_64() {
        let good = blob();
        assert!(verify_blob(std::str::from_utf8(&good).expect("ascii")).is_ok());
        let mut short = good.clone();
        short.pop();
        assert!(verify_blob(std::str::from_utf8(&short).expect("ascii")).is_err());
        let mut holed = good.clone();
        holed[64 * 100 + 30] = b'y';
        assert!(verify_blob(std::str::from_utf8(&holed).expect("ascii")).is_err());
        let mut tail = good;
        tail[BLOB_BYTES - 1] = b'y';
        assert!(verify_blob(std::str::from_utf8(&tail).expect("ascii")).is_err());
    }
}
