//! A roots-aware file server over stdio: read, list, search and (after the user confirms)
//! write files, only inside the directories given on the command line — narrowed to the
//! client's roots when the client offers roots.
//!
//! `cargo run -p portico-mcp --example filesystem -- DIR [DIR...]`
//!
//! Tools: `read_file`, `list_directory`, `search_files`, `write_file` (asks for confirmation
//! with form elicitation). Resources: the template `file:///{+path}`. Paths are canonicalized;
//! `..`, absolute paths outside the allowed directories and symlinks that lead outside are
//! refused as tool errors. The core lives in `filesystem/server.rs` so tests can use it without
//! a process.
#[path = "filesystem/server.rs"]
mod server;

use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        eprintln!("usage: filesystem DIR [DIR...]");
        std::process::exit(2);
    }
    let server = server::server(&dirs)?;
    // stdout is the protocol: anything for humans goes to stderr.
    eprintln!("filesystem: serving {} director{} on stdio", dirs.len(), if dirs.len() == 1 { "y" } else { "ies" });
    server.serve(portico::transport::stdio::stdio()).await?;
    Ok(())
}
