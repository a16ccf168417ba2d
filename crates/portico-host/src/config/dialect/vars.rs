//! Each client's `${…}` rewritten into Portico's (see [`crate::config::expand`]), and text that
//! is no variable escaped so that Portico reads it back as it was (`${` → `$${`).

use std::collections::BTreeMap;

use super::{ImportContext, InputRequest};
use crate::config::ConfigError;

/// What one `${BODY}` of a client's value becomes.
pub(super) enum Piece {
    /// Portico's own syntax (`${NAME}`, `${file:PATH}`), written as it is.
    Var(String),
    /// Plain text (a resolved folder, an answer), escaped when written.
    Text(String),
}

/// `value` with each `${BODY}` replaced by what `var` makes of `BODY`, and every piece of plain
/// text escaped. An unclosed `${` is plain text.
pub(super) fn rewrite(
    value: &str,
    field: &str,
    var: &mut dyn FnMut(&str) -> Result<Piece, ConfigError>,
) -> Result<String, ConfigError> {
    let (mut out, mut text, mut rest) = (String::new(), String::new(), value);
    while let Some(at) = rest.find("${") {
        let Some(len) = rest[at + 2..].find('}') else { break };
        text.push_str(&rest[..at]);
        match var(&rest[at + 2..at + 2 + len])? {
            Piece::Text(t) => text.push_str(&t),
            Piece::Var(v) => {
                out.push_str(&escape(&std::mem::take(&mut text)));
                if out.ends_with('$') {
                    // `$${` is Portico's escape, so a `$` cannot stand right before a variable.
                    return Err(ConfigError::new("a `$` right before `${…}` cannot be written in Portico's syntax")
                        .field(field));
                }
                out.push_str(&v);
            }
        }
        rest = &rest[at + 3 + len..];
    }
    text.push_str(rest);
    out.push_str(&escape(&text));
    Ok(out)
}

/// `text` as Portico reads it back unchanged: every `${` written `$${`.
pub(super) fn escape(text: &str) -> String {
    text.replace("${", "$${")
}

/// The value of a client with no variables of its own (Claude Desktop, Zed, Codex, Goose,
/// Cline): plain text.
pub(super) fn literal(value: &str, _field: &str) -> Result<String, ConfigError> {
    Ok(escape(value))
}

/// The variables of VS Code and of Cursor (which took them from VS Code): `${env:NAME}`,
/// `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}`, `${pathSeparator}` (`${/}`),
/// and VS Code's `${input:ID}`.
pub(super) struct Editor<'a, 'c> {
    cx: &'a ImportContext<'c>,
    client: &'static str,
    /// VS Code's declared inputs; `None` for Cursor, which has none.
    inputs: Option<BTreeMap<String, InputRequest>>,
    answers: BTreeMap<String, String>,
    /// What was resolved or kept, for the server being read; taken with [`Editor::take_notes`].
    notes: Vec<String>,
}

impl<'a, 'c> Editor<'a, 'c> {
    /// Cursor's variables: one it does not define is kept as text, as Cursor keeps it.
    pub(super) fn cursor(cx: &'a ImportContext<'c>) -> Self {
        Editor { cx, client: "Cursor", inputs: None, answers: BTreeMap::new(), notes: Vec::new() }
    }

    /// VS Code's, with its `inputs`: a variable not listed here is an error, since VS Code has
    /// more (`${config:…}`, `${command:…}`) that only it can resolve.
    pub(super) fn vscode(cx: &'a ImportContext<'c>, inputs: BTreeMap<String, InputRequest>) -> Self {
        Editor { cx, client: "VS Code", inputs: Some(inputs), answers: BTreeMap::new(), notes: Vec::new() }
    }

    /// `value` (of `field`) in Portico's syntax.
    pub(super) fn rewrite(&mut self, value: &str, field: &str) -> Result<String, ConfigError> {
        rewrite(value, field, &mut |body| self.var(body, field))
    }

    /// The notes about the server read since the last call.
    pub(super) fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    fn var(&mut self, body: &str, field: &str) -> Result<Piece, ConfigError> {
        if let Some(name) = body.strip_prefix("env:") {
            return Ok(Piece::Var(format!("${{{name}}}")));
        }
        let workspace = || {
            self.cx.workspace.ok_or_else(|| {
                ConfigError::new(format!("`${{{body}}}` needs a workspace folder, and none was given")).field(field)
            })
        };
        match body {
            "userHome" => Ok(Piece::Var("${HOME}".to_owned())),
            "pathSeparator" | "/" => Ok(Piece::Text("/".to_owned())),
            "workspaceFolder" => {
                let folder = workspace()?.to_string_lossy().into_owned();
                self.note(format!("`${{workspaceFolder}}` → {folder}"));
                Ok(Piece::Text(folder))
            }
            "workspaceFolderBasename" => {
                let base = workspace()?.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                Ok(Piece::Text(base))
            }
            _ => match (body.strip_prefix("input:"), &self.inputs) {
                (Some(id), Some(inputs)) => {
                    let answer = match self.answers.get(id) {
                        Some(answer) => answer.clone(),
                        None => {
                            let request = inputs.get(id).ok_or_else(|| {
                                ConfigError::new(format!("`${{input:{id}}}` is not declared in `inputs`")).field(field)
                            })?;
                            let answer = (self.cx.input)(request).map_err(|e| match e.field {
                                Some(_) => e,
                                None => e.field(field),
                            })?;
                            self.answers.insert(id.to_owned(), answer.clone());
                            answer
                        }
                    };
                    self.note(format!("`${{input:{id}}}`: the answer is written into the imported value"));
                    Ok(Piece::Text(answer))
                }
                _ if self.inputs.is_some() => {
                    Err(ConfigError::new(format!("`${{{body}}}` is a {} variable Portico cannot resolve", self.client))
                        .field(field))
                }
                _ => {
                    self.note(format!("`${{{body}}}` is not a {} variable: kept as text", self.client));
                    Ok(Piece::Text(format!("${{{body}}}")))
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep(body: &str) -> Result<Piece, ConfigError> {
        Ok(match body {
            "T" => Piece::Text("${x}".into()),
            _ => Piece::Var(format!("${{{body}}}")),
        })
    }

    #[test]
    fn rewrites_variables_and_escapes_text() {
        let r = |v: &str| rewrite(v, "f", &mut keep);
        assert_eq!(r("a ${A} b").expect("no error"), "a ${A} b");
        assert_eq!(r("${T}-${A}").expect("no error"), "$${x}-${A}");
        assert_eq!(r("cost $5 ${unclosed").expect("no error"), "cost $5 $${unclosed");
        assert_eq!(r("$${A}").expect_err("an error").field.as_deref(), Some("f"));
        assert_eq!(escape("$${a} ${b}"), "$$${a} $${b}");
    }
}
