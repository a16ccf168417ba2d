//! The terminal as an approval channel: `portico call` on a TTY puts its own `ask` to the
//! person right there.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use portico_host::approvals::{Answer, Approvals, Choice, Event};

/// Answers approvals from this terminal until the returned handle is dropped; `None` when
/// stdin or stderr is not a terminal. `paused` is set while a question is on screen (the
/// spinner waits).
pub(crate) fn attach(approvals: &Approvals, paused: Arc<AtomicBool>) -> Option<tokio::task::JoinHandle<()>> {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return None;
    }
    let approvals = approvals.clone();
    let mut events = approvals.subscribe();
    Some(tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            let Event::Requested(p) = event else { continue };
            paused.store(true, Ordering::SeqCst);
            let question = format!(
                "\r\x1b[2K{} wants to run `{}` (server `{}`) with\n{}\n{}{}[o]nce  [s]ession  [a]lways  [d]eny? ",
                p.principal,
                p.exposed,
                p.server,
                serde_json::to_string_pretty(&p.arguments).unwrap_or_default(),
                p.reason.as_deref().map(|r| format!("Why you are asked: {r}\n")).unwrap_or_default(),
                p.warnings.iter().map(|w| format!("Careful, about this tool: {w}\n")).collect::<String>(),
            );
            let choice = tokio::task::spawn_blocking(move || {
                let mut err = std::io::stderr();
                loop {
                    let _ = write!(err, "{question}");
                    let _ = err.flush();
                    let mut line = String::new();
                    if std::io::stdin().lock().read_line(&mut line).ok()? == 0 {
                        return None;
                    }
                    match line.trim() {
                        "o" | "once" | "y" => return Some(Choice::AllowOnce),
                        "s" | "session" => return Some(Choice::AllowSession),
                        "a" | "always" => return Some(Choice::AllowAlways),
                        "d" | "deny" | "n" => return Some(Choice::Deny),
                        _ => {}
                    }
                }
            })
            .await
            .ok()
            .flatten();
            paused.store(false, Ordering::SeqCst);
            if let Some(choice) = choice {
                let who = std::env::var("USER").unwrap_or_else(|_| "terminal".to_owned());
                let _ = approvals.answer(&p.id, Answer::now(choice, "terminal", who));
            }
        }
    }))
}
