//! The filesystem example's server, driven by the in-memory client in both eras: reads, lists
//! and searches inside the allowed directory; `..`, outside absolute paths and symlinks that
//! lead outside are refused as tool errors; `write_file` writes only when the user accepts;
//! the client's roots narrow what is allowed.

#[allow(dead_code)]
#[path = "../examples/filesystem/server.rs"]
mod fs_server;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::BoxFuture;
use portico::client::{Client, ClientHandler, EraMode};
use portico::schema::*;
use serde_json::json;

const MODES: [EraMode; 2] = [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless];

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!(
            "portico-fs-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p.canonicalize().expect("canonical"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `tmp/allowed/{a.txt, sub/b.txt, sub/needle-1.md}`, `tmp/outside/secret.txt`, and symlinks
/// `allowed/link.txt` → the secret, `allowed/linkdir` → `outside/`.
fn layout() -> (TempDir, PathBuf, PathBuf) {
    let t = TempDir::new();
    let allowed = t.0.join("allowed");
    let outside = t.0.join("outside");
    std::fs::create_dir_all(allowed.join("sub")).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(allowed.join("a.txt"), "alpha").expect("write");
    std::fs::write(allowed.join("sub/b.txt"), "beta").expect("write");
    std::fs::write(allowed.join("sub/needle-1.md"), "n").expect("write");
    std::fs::write(outside.join("secret.txt"), "top secret").expect("write");
    std::fs::write(outside.join("needle-secret.txt"), "x").expect("write");
    std::os::unix::fs::symlink(outside.join("secret.txt"), allowed.join("link.txt")).expect("symlink");
    std::os::unix::fs::symlink(&outside, allowed.join("linkdir")).expect("symlink");
    (t, allowed, outside)
}

/// Answers elicitation with `accept`/`decline`, and roots with `roots` (if any).
struct Host {
    accept: bool,
    roots: Vec<String>,
    asked: AtomicUsize,
}

impl ClientHandler for Host {
    fn elicit(&self, _: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let r = if self.accept {
            ElicitResult::accept(json!({"confirm": true}).as_object().cloned().unwrap_or_default())
        } else {
            ElicitResult::decline()
        };
        Box::pin(async move { Ok(r) })
    }
    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        let roots = self.roots.iter().map(Root::new).collect();
        Box::pin(async move { Ok(ListRootsResult::new(roots)) })
    }
}

async fn connect(
    dirs: &[PathBuf],
    mode: EraMode,
    accept: bool,
    roots: Option<Vec<String>>,
) -> (Client, std::sync::Arc<Host>) {
    let server = fs_server::server(dirs).expect("server");
    let (c, s) = portico::transport::memory::pair();
    server.connect(s);
    let mut caps = ClientCapabilities::new().with_elicitation(true, false);
    if roots.is_some() {
        caps = caps.with_roots(false);
    }
    let host = std::sync::Arc::new(Host { accept, roots: roots.unwrap_or_default(), asked: AtomicUsize::new(0) });
    let client = Client::builder(Implementation::new("test", "0.0.1"))
        .capabilities(caps)
        .handler(SharedHost(host.clone()))
        .era(mode)
        .connect(c)
        .await
        .expect("connect");
    (client, host)
}

struct SharedHost(std::sync::Arc<Host>);

impl ClientHandler for SharedHost {
    fn elicit(&self, p: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        self.0.elicit(p)
    }
    fn list_roots(&self) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        self.0.list_roots()
    }
}

fn text(r: &CallToolResult) -> String {
    match r.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("expected text, got {other:?}"),
    }
}

async fn ok(client: &Client, tool: &str, args: serde_json::Value) -> String {
    let r = client.call_tool(tool, args.clone()).await.expect("call");
    assert_ne!(r.is_error, Some(true), "{tool} {args}: {}", text(&r));
    text(&r)
}

async fn refused(client: &Client, tool: &str, args: serde_json::Value) -> String {
    let r = client.call_tool(tool, args.clone()).await.expect("a refusal is a tool result");
    assert_eq!(r.is_error, Some(true), "{tool} {args} should be refused: {}", text(&r));
    text(&r)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[tokio::test]
async fn reads_lists_and_searches_inside_the_allowed_directory() {
    let (_t, allowed, _outside) = layout();
    for mode in MODES {
        let (client, _) = connect(std::slice::from_ref(&allowed), mode, true, None).await;
        let names: Vec<_> = client.list_all_tools().await.expect("list").into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["list_directory", "read_file", "search_files", "write_file"]);

        assert_eq!(ok(&client, "read_file", json!({"path": s(&allowed.join("a.txt"))})).await, "alpha");
        assert_eq!(ok(&client, "read_file", json!({"path": "sub/b.txt"})).await, "beta", "relative to the first dir");
        let listing = ok(&client, "list_directory", json!({"path": s(&allowed)})).await;
        assert!(listing.contains("[FILE] a.txt") && listing.contains("[DIR] sub"), "{listing}");
        let found = ok(&client, "search_files", json!({"path": s(&allowed), "pattern": "NEEDLE"})).await;
        assert_eq!(found, s(&allowed.join("sub/needle-1.md")), "case-insensitive; symlinked dirs not followed");

        // The resource template reads the same files.
        let uri = format!("file://{}", s(&allowed.join("sub/b.txt")));
        let r = client.read_resource(&uri).await.expect("read resource");
        assert!(matches!(&r.contents[0], ResourceContents::Text(t) if t.text == "beta"));
        client.close().await;
    }
}

#[tokio::test]
async fn escapes_are_tool_errors() {
    let (_t, allowed, outside) = layout();
    for mode in MODES {
        let (client, _) = connect(std::slice::from_ref(&allowed), mode, true, None).await;
        let e = refused(&client, "read_file", json!({"path": "../outside/secret.txt"})).await;
        assert!(e.contains("`..` is not allowed"), "{e}");
        let e = refused(&client, "read_file", json!({"path": format!("{}/../outside/secret.txt", s(&allowed))})).await;
        assert!(e.contains("`..`"), "{e}");
        let e = refused(&client, "read_file", json!({"path": s(&outside.join("secret.txt"))})).await;
        assert!(e.contains("outside the allowed directories"), "{e}");
        let e = refused(&client, "read_file", json!({"path": "/etc/hostname"})).await;
        assert!(e.contains("access denied") || e.contains("not found"), "{e}");
        // Symlinks that resolve outside: a file link and a directory link.
        let e = refused(&client, "read_file", json!({"path": s(&allowed.join("link.txt"))})).await;
        assert!(e.contains("outside the allowed directories"), "{e}");
        let e = refused(&client, "read_file", json!({"path": "linkdir/secret.txt"})).await;
        assert!(e.contains("outside the allowed directories"), "{e}");
        refused(&client, "list_directory", json!({"path": "linkdir"})).await;
        refused(&client, "search_files", json!({"path": s(&outside), "pattern": "secret"})).await;
        let e = refused(&client, "write_file", json!({"path": "link.txt", "content": "pwned"})).await;
        assert!(e.contains("outside the allowed directories"), "{e}");
        assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).expect("read"), "top secret");
        // The resource template refuses too, with a protocol error.
        let uri = format!("file://{}", s(&outside.join("secret.txt")));
        client.read_resource(&uri).await.expect_err("outside");
        let missing = format!("file://{}", s(&allowed.join("nope.txt")));
        let e = client.read_resource(&missing).await.expect_err("missing");
        let want = if mode == EraMode::Stateless { ErrorCode::INVALID_PARAMS } else { ErrorCode::RESOURCE_NOT_FOUND };
        assert_eq!(e.peer_error().map(|e| e.code), Some(want));
        client.close().await;
    }
}

#[tokio::test]
async fn oversized_files_are_refused() {
    let (_t, allowed, _) = layout();
    let big = allowed.join("big.txt");
    std::fs::write(&big, vec![b'x'; usize::try_from(fs_server::MAX_READ_BYTES).expect("fits") + 1]).expect("write");
    let (client, _) = connect(std::slice::from_ref(&allowed), MODES[0], true, None).await;
    let e = refused(&client, "read_file", json!({"path": "big.txt"})).await;
    assert!(e.contains("larger than"), "{e}");
    client.close().await;
}

#[tokio::test]
async fn write_file_writes_only_when_the_user_accepts() {
    let (_t, allowed, _) = layout();
    for mode in MODES {
        // Declined: nothing changes, new or existing.
        let (client, host) = connect(std::slice::from_ref(&allowed), mode, false, None).await;
        let msg = ok(&client, "write_file", json!({"path": "a.txt", "content": "changed"})).await;
        assert!(msg.starts_with("not written"), "{msg}");
        ok(&client, "write_file", json!({"path": "new.txt", "content": "new"})).await;
        assert!(host.asked.load(Ordering::SeqCst) >= 2, "the user was asked");
        assert_eq!(std::fs::read_to_string(allowed.join("a.txt")).expect("read"), "alpha");
        assert!(!allowed.join("new.txt").exists());
        client.close().await;

        // Accepted: written.
        let (client, _) = connect(std::slice::from_ref(&allowed), mode, true, None).await;
        let msg = ok(&client, "write_file", json!({"path": "new.txt", "content": "fresh"})).await;
        assert!(msg.starts_with("wrote 5 bytes"), "{msg}");
        assert_eq!(std::fs::read_to_string(allowed.join("new.txt")).expect("read"), "fresh");
        refused(&client, "write_file", json!({"path": "missing-dir/x.txt", "content": "x"})).await;
        client.close().await;
        std::fs::remove_file(allowed.join("new.txt")).expect("cleanup");
    }
}

#[tokio::test]
async fn roots_narrow_the_allowed_directories() {
    let (_t, allowed, outside) = layout();
    let dirs = [allowed.clone(), outside.clone()];
    for mode in MODES {
        // Without roots both directories are allowed.
        let (client, _) = connect(&dirs, mode, true, None).await;
        assert_eq!(ok(&client, "read_file", json!({"path": s(&outside.join("secret.txt"))})).await, "top secret");
        client.close().await;

        // Roots: only allowed/sub (inside the first dir); `outside` is not a root.
        let root = format!("file://{}", s(&allowed.join("sub")));
        let (client, _) = connect(&dirs, mode, true, Some(vec![root])).await;
        assert_eq!(ok(&client, "read_file", json!({"path": s(&allowed.join("sub/b.txt"))})).await, "beta");
        let e = refused(&client, "read_file", json!({"path": s(&allowed.join("a.txt"))})).await;
        assert!(e.contains("outside the allowed directories"), "{e}");
        refused(&client, "read_file", json!({"path": s(&outside.join("secret.txt"))})).await;
        client.close().await;

        // Roots that share nothing with the command line: nothing is allowed.
        let (client, _) = connect(&dirs, mode, true, Some(vec!["file:///nonexistent-root".into()])).await;
        let e = refused(&client, "read_file", json!({"path": s(&allowed.join("a.txt"))})).await;
        assert!(e.contains("no directory is allowed"), "{e}");
        client.close().await;
    }
}

#[test]
fn helpers() {
    assert_eq!(fs_server::file_uri_to_path("file:///a/b%20c"), Some(PathBuf::from("/a/b c")));
    assert_eq!(fs_server::file_uri_to_path("file://localhost/x"), Some(PathBuf::from("/x")));
    assert_eq!(fs_server::file_uri_to_path("https://x/y"), None);
    let i = fs_server::intersect(
        &[PathBuf::from("/a"), PathBuf::from("/b/c")],
        &[PathBuf::from("/a/x"), PathBuf::from("/b")],
    );
    assert_eq!(i, [PathBuf::from("/a/x"), PathBuf::from("/b/c")]);
}
