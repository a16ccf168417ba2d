//! The filesystem server's core: path checks, the file operations, and the [`Server`] built
//! from them. No process, no stdio: tests include this module directly.

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use portico::schema::{
    BooleanSchema, ElicitAction, ElicitRequestFormParams, ElicitRequestParams, Implementation, JsonObject,
    RequestedSchema, ResourceContents, ResourceTemplate, Tool, ToolAnnotations, object,
};
use portico::server::{HandlerError, RequestContext, ResourceRequest, Server};
use serde::Deserialize;
use serde_json::json;

/// The largest file `read_file` and the resource template return (1 MiB).
pub const MAX_READ_BYTES: u64 = 1024 * 1024;
/// At most this many matches from `search_files`.
pub const MAX_SEARCH_RESULTS: usize = 100;
/// `search_files` looks at no more than this many directory entries.
pub const MAX_SEARCH_VISITS: usize = 20_000;
/// At most this many entries from `list_directory`.
pub const MAX_LIST_ENTRIES: usize = 1000;

#[derive(Deserialize)]
struct PathArg {
    path: String,
}

#[derive(Deserialize)]
struct SearchArg {
    path: String,
    pattern: String,
}

#[derive(Deserialize)]
struct WriteArg {
    path: String,
    content: String,
}

/// Builds the server for the directories `dirs` (canonicalized here: each must exist).
///
/// # Errors
/// When a directory does not exist or is not a directory.
pub fn server(dirs: &[PathBuf]) -> std::io::Result<Server> {
    let mut base = Vec::new();
    for d in dirs {
        let c = d.canonicalize()?;
        if !c.is_dir() {
            return Err(std::io::Error::other(format!("{} is not a directory", d.display())));
        }
        base.push(c);
    }
    let base: Arc<[PathBuf]> = base.into();
    let (b1, b2, b3, b4, b5) = (base.clone(), base.clone(), base.clone(), base.clone(), base);

    Ok(Server::builder(Implementation::new("filesystem", env!("CARGO_PKG_VERSION")))
        .instructions("Reads, lists, searches and (with the user's confirmation) writes files in allowed directories.")
        .tool(
            Tool::new("read_file", path_schema(&[]))
                .with_description("Reads a UTF-8 text file (at most 1 MiB)")
                .with_annotations(ToolAnnotations::new().with_read_only(true)),
            move |a: PathArg, cx: RequestContext| {
                let base = b1.clone();
                async move {
                    let allowed = allowed_dirs(&base, &cx).await?;
                    blocking(move || read_text(&resolve(&allowed, &a.path)?)).await
                }
            },
        )
        .tool(
            Tool::new("list_directory", path_schema(&[]))
                .with_description("Lists a directory: [DIR] and [FILE] entries")
                .with_annotations(ToolAnnotations::new().with_read_only(true)),
            move |a: PathArg, cx: RequestContext| {
                let base = b2.clone();
                async move {
                    let allowed = allowed_dirs(&base, &cx).await?;
                    blocking(move || list_dir(&resolve(&allowed, &a.path)?)).await
                }
            },
        )
        .tool(
            Tool::new("search_files", path_schema(&[("pattern", "Case-insensitive substring of file names")]))
                .with_description("Finds files and directories whose name contains `pattern`, recursively")
                .with_annotations(ToolAnnotations::new().with_read_only(true)),
            move |a: SearchArg, cx: RequestContext| {
                let base = b3.clone();
                async move {
                    let allowed = allowed_dirs(&base, &cx).await?;
                    blocking(move || {
                        let root = resolve(&allowed, &a.path)?;
                        search(&allowed, &root, &a.pattern)
                    })
                    .await
                }
            },
        )
        .tool(
            Tool::new("write_file", path_schema(&[("content", "The new content of the file")]))
                .with_description("Creates or replaces a text file, after the user confirms")
                .with_annotations(ToolAnnotations::new().with_destructive(true)),
            move |a: WriteArg, cx: RequestContext| {
                let base = b4.clone();
                async move { write_confirmed(&base, a, &cx).await }
            },
        )
        .resource_template(
            ResourceTemplate::new("file:///{+path}", "file")
                .with_description("A file in an allowed directory")
                .with_mime_type("text/plain"),
            move |r: ResourceRequest, cx: RequestContext| {
                let base = b5.clone();
                async move {
                    let allowed = allowed_dirs(&base, &cx).await.map_err(HandlerError::invalid_params)?;
                    let path = format!("/{}", r.var("path").unwrap_or_default());
                    match blocking(move || read_text(&resolve(&allowed, &path)?)).await {
                        Ok(text) => Ok(ResourceContents::text(r.uri(), text)),
                        Err(e) if e.starts_with("not found") => Err(HandlerError::resource_not_found(r.uri())),
                        Err(e) => Err(HandlerError::invalid_params(e)),
                    }
                }
            },
        )
        .build())
}

fn path_schema(extra: &[(&str, &str)]) -> JsonObject {
    let mut props =
        json!({ "path": { "type": "string", "description": "Absolute, or relative to the first allowed directory" } });
    let mut required = vec!["path".to_owned()];
    for (name, description) in extra {
        props[*name] = json!({ "type": "string", "description": description });
        required.push((*name).to_owned());
    }
    object(json!({ "type": "object", "properties": props, "required": required }))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(f).await.map_err(|e| format!("internal error: {e}"))?
}

/// The directories this request may touch: the command-line ones, narrowed to the client's
/// roots when the client offers roots.
pub async fn allowed_dirs(base: &[PathBuf], cx: &RequestContext) -> Result<Vec<PathBuf>, String> {
    if !cx.client_capabilities().supports_roots() {
        return Ok(base.to_vec());
    }
    let roots = cx.list_roots().await.map_err(|e| format!("cannot list the client's roots: {e}"))?;
    let roots: Vec<PathBuf> =
        roots.roots.iter().filter_map(|r| file_uri_to_path(&r.uri)).filter_map(|p| p.canonicalize().ok()).collect();
    Ok(intersect(base, &roots))
}

/// The parts of `base` that lie inside some root (each directory the deeper of the two).
pub fn intersect(base: &[PathBuf], roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for b in base {
        for r in roots {
            let inner = if r.starts_with(b) {
                r
            } else if b.starts_with(r) {
                b
            } else {
                continue;
            };
            if !out.contains(inner) {
                out.push(inner.clone());
            }
        }
    }
    out
}

/// `file:///a/b%20c` → `/a/b c`; `None` for other schemes and remote hosts.
pub fn file_uri_to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}

/// Resolves `requested` to a canonical path inside one of `allowed` (themselves canonical),
/// or says why not. A path that does not exist yet (for `write_file`) must have an existing
/// parent inside the allowed directories.
pub fn resolve(allowed: &[PathBuf], requested: impl AsRef<Path>) -> Result<PathBuf, String> {
    let first = allowed.first().ok_or("no directory is allowed (the client's roots exclude all of them)")?;
    let p = requested.as_ref();
    let requested = p.display();
    if p.components().any(|c| c == Component::ParentDir) {
        return Err(format!("access denied: `..` is not allowed in paths ({requested})"));
    }
    let full = if p.is_absolute() { p.to_path_buf() } else { first.join(p) };
    let canonical = match full.canonicalize() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink would be followed on write: refuse it outright.
            if full.symlink_metadata().is_ok() {
                return Err(format!("access denied: {requested} is a symlink to a missing target"));
            }
            let (Some(parent), Some(name)) = (full.parent(), full.file_name()) else {
                return Err(format!("not found: {requested}"));
            };
            let parent = parent.canonicalize().map_err(|_| format!("not found: {requested}"))?;
            parent.join(name)
        }
        Err(e) => return Err(format!("cannot access {requested}: {e}")),
    };
    if allowed.iter().any(|a| canonical.starts_with(a)) {
        Ok(canonical)
    } else {
        Err(format!("access denied: {requested} is outside the allowed directories"))
    }
}

/// Reads a UTF-8 file of at most [`MAX_READ_BYTES`].
pub fn read_text(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("not found: {}", path.display()),
        _ => format!("cannot read {}: {e}", path.display()),
    })?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", path.display()));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(format!("{} is larger than {MAX_READ_BYTES} bytes", path.display()));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    // The file may grow between the check and the read: never read more than the limit.
    file.take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(format!("{} is larger than {MAX_READ_BYTES} bytes", path.display()));
    }
    String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))
}

/// `[DIR] name` and `[FILE] name` lines, sorted by name.
pub fn list_dir(path: &Path) -> Result<String, String> {
    let entries = std::fs::read_dir(path).map_err(|e| format!("cannot list {}: {e}", path.display()))?;
    let mut lines = Vec::new();
    for entry in entries.flatten().take(MAX_LIST_ENTRIES) {
        let kind = if entry.file_type().is_ok_and(|t| t.is_dir()) { "[DIR]" } else { "[FILE]" };
        lines.push(format!("{kind} {}", entry.file_name().to_string_lossy()));
    }
    lines.sort_by(|a, b| a.split_once(' ').map(|x| x.1).cmp(&b.split_once(' ').map(|x| x.1)));
    Ok(if lines.is_empty() { "(empty)".to_owned() } else { lines.join("\n") })
}

/// Paths under `root` whose file name contains `pattern` (case-insensitive), bounded.
/// Symlinks are not followed.
pub fn search(allowed: &[PathBuf], root: &Path, pattern: &str) -> Result<String, String> {
    if pattern.is_empty() {
        return Err("the pattern is empty".to_owned());
    }
    let needle = pattern.to_lowercase();
    let (mut found, mut visits, mut stack) = (Vec::new(), 0usize, vec![root.to_path_buf()]);
    'walk: while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            visits += 1;
            if visits > MAX_SEARCH_VISITS || found.len() >= MAX_SEARCH_RESULTS {
                break 'walk;
            }
            let path = entry.path();
            if entry.file_name().to_string_lossy().to_lowercase().contains(&needle) {
                found.push(path.display().to_string());
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) && allowed.iter().any(|a| path.starts_with(a)) {
                stack.push(path);
            }
        }
    }
    found.sort();
    Ok(if found.is_empty() { "no matches".to_owned() } else { found.join("\n") })
}

async fn write_confirmed(base: &[PathBuf], a: WriteArg, cx: &RequestContext) -> Result<String, String> {
    let allowed = allowed_dirs(base, cx).await?;
    let path = resolve(&allowed, &a.path)?;
    let form = RequestedSchema::new().with_required_property(
        "confirm",
        BooleanSchema::new().with_title("Write the file").with_description("Check to allow the write"),
    );
    let message = format!("Write {} bytes to {}?", a.content.len(), path.display());
    let params = ElicitRequestParams::from(ElicitRequestFormParams::new(message, form));
    let answer = cx.elicit(params).await.map_err(|e| format!("cannot ask the user for confirmation: {e}"))?;
    let confirmed = answer.action == ElicitAction::Accept
        && answer.content.as_ref().and_then(|c| c.get("confirm")).and_then(serde_json::Value::as_bool) == Some(true);
    if !confirmed {
        return Ok(format!("not written: the user did not confirm writing {}", path.display()));
    }
    let len = a.content.len();
    blocking(move || {
        // Re-check right before writing: the path may have changed while the user decided.
        let again = resolve(&allowed, &path)?;
        std::fs::write(&again, a.content).map_err(|e| format!("cannot write {}: {e}", again.display()))?;
        Ok(format!("wrote {len} bytes to {}", again.display()))
    })
    .await
}
