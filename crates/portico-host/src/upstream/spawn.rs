//! Starting a stdio upstream: no shell, its own process group, and tied to the gateway's life.
//!
//! - The command and its arguments go to `execve` as they are; nothing is interpreted by a
//!   shell, so a `;` or `$(…)` in an argument is just text.
//! - The child leads a process group of its own, and every signal goes to the group
//!   ([`ChildProcess::process_group`]), so what it starts (`npx` starts `node`) stops with it.
//! - On Linux the child asks the kernel for `SIGKILL` when the gateway's thread that spawned it
//!   ends (`PR_SET_PDEATHSIG`), so even `kill -9` of the gateway leaves no child behind. The
//!   signal follows the *thread*: children are spawned from the runtime's worker threads, which
//!   live as long as the runtime, never from `spawn_blocking` threads, which end when idle.
//!   Elsewhere, the child sees its stdin close when the gateway dies, which MCP servers treat as
//!   the end.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

use portico::transport::child::{ChildHandle, ChildProcess, ChildTransport};

use crate::config::Secret;

/// What to run.
#[derive(Debug)]
pub(crate) struct Spawn<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, Secret>,
    pub cwd: Option<&'a PathBuf>,
    pub max_message_size: usize,
}

/// Spawns the child as the module docs say; `stderr` receives each line it writes there.
pub(crate) fn spawn(
    what: &Spawn<'_>,
    stderr: impl Fn(&str) + Send + Sync + 'static,
) -> io::Result<(ChildTransport, ChildHandle)> {
    let mut child = ChildProcess::new(what.command);
    child.args(what.args).envs(what.env.iter().map(|(k, v)| (k, v.expose()))).max_message_size(what.max_message_size);
    if let Some(cwd) = what.cwd {
        child.current_dir(cwd);
    }
    child.process_group(true).on_stderr(stderr);
    die_with_parent(&mut child);
    child.spawn()
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(child: &mut ChildProcess) {
    use nix::sys::signal::Signal;
    use nix::unistd::{Pid, getppid};
    let parent = Pid::this();
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed. It makes two system calls (prctl, getppid) and
    // allocates nothing, takes no lock and touches no shared state.
    unsafe {
        child.command_mut().pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            // The gateway may have died between fork and prctl: then nobody would send the
            // signal, so the child stops here instead.
            if getppid() != parent {
                return Err(io::Error::other("the gateway exited while this server was starting"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_child: &mut ChildProcess) {}
