//! `${…}` in config values: `${VAR}`, `${VAR:-default}`, `${env:VAR}` and `${file:PATH}`.
//!
//! - `${VAR}` is the environment variable `VAR`; unset, it is an error that names the field.
//! - `${VAR:-default}` is `default` when `VAR` is unset or empty.
//! - `${env:VAR}` is `${VAR}` (Cursor's and Windsurf's spelling).
//! - `${file:PATH}` is the contents of the file at `PATH`, without its final newline: a secret
//!   kept in a file (`~/` at its start is the home directory).
//! - `$${` is a literal `${`. A `$` not followed by `{` is itself: a bare `$VAR` is not expanded.
//!
//! Errors name the field and the variable, never a value.

use super::ConfigError;

/// Where expanded values come from: the environment and files, or a test's stand-ins.
pub trait Source {
    /// The variable `name`, if set.
    fn var(&self, name: &str) -> Option<String>;
    /// The contents of the file at `path`.
    ///
    /// # Errors
    /// When it cannot be read; the message names the path, not the contents.
    fn file(&self, path: &str) -> Result<String, String>;
}

/// The process environment and the file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct Environment;

impl Source for Environment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn file(&self, path: &str) -> Result<String, String> {
        let path = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
            (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
            _ => std::path::PathBuf::from(path),
        };
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    }
}

/// Expands every `${…}` in `value` (the value of `field`, for errors).
///
/// # Errors
/// On an unset variable without a default, an unreadable file, or an unclosed `${`.
pub fn expand(value: &str, field: &str, source: &dyn Source) -> Result<String, ConfigError> {
    if !value.contains('$') {
        return Ok(value.to_owned());
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(body_and_rest) = tail.strip_prefix("${") {
            let end =
                body_and_rest.find('}').ok_or_else(|| ConfigError::new("`${` without a closing `}`").field(field))?;
            out.push_str(&resolve(&body_and_rest[..end], field, source)?);
            rest = &body_and_rest[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve(body: &str, field: &str, source: &dyn Source) -> Result<String, ConfigError> {
    if let Some(path) = body.strip_prefix("file:") {
        let text = source.file(path).map_err(|e| ConfigError::new(e).field(field))?;
        return Ok(text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text).to_owned());
    }
    let body = body.strip_prefix("env:").unwrap_or(body);
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ConfigError::new(format!("`${{{name}}}` is not a variable name")).field(field));
    }
    match (source.var(name), default) {
        (Some(v), Some(d)) if v.is_empty() => Ok(d.to_owned()),
        (Some(v), _) => Ok(v),
        (None, Some(d)) => Ok(d.to_owned()),
        (None, None) => Err(ConfigError::new(format!(
            "the variable `{name}` is not set (write `${{{name}:-default}}` for a default)"
        ))
        .field(field)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    struct Fake(HashMap<&'static str, &'static str>);

    impl Source for Fake {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|v| (*v).to_owned())
        }
        fn file(&self, path: &str) -> Result<String, String> {
            match path {
                "/run/secret" => Ok("sk-from-file\n".into()),
                _ => Err(format!("cannot read {path}")),
            }
        }
    }

    fn fake() -> Fake {
        Fake(HashMap::from([("HOME", "/home/ada"), ("EMPTY", ""), ("TOKEN", "sk-secret")]))
    }

    #[test]
    fn expands_every_form() {
        let s = fake();
        assert_eq!(expand("${HOME}/x", "f", &s).as_deref(), Ok("/home/ada/x"));
        assert_eq!(expand("${env:HOME}", "f", &s).as_deref(), Ok("/home/ada"));
        assert_eq!(expand("${NOPE:-d}", "f", &s).as_deref(), Ok("d"));
        assert_eq!(expand("${EMPTY:-d}", "f", &s).as_deref(), Ok("d"));
        assert_eq!(expand("${HOME:-d}", "f", &s).as_deref(), Ok("/home/ada"));
        assert_eq!(expand("Bearer ${file:/run/secret}", "f", &s).as_deref(), Ok("Bearer sk-from-file"));
        assert_eq!(expand("$HOME $${HOME} $", "f", &s).as_deref(), Ok("$HOME ${HOME} $"));
        assert_eq!(expand("a${HOME}b${HOME}c", "f", &s).as_deref(), Ok("a/home/adab/home/adac"));
    }

    #[test]
    fn errors_name_the_field_and_never_a_value() {
        let s = fake();
        let e = expand("x ${MISSING}", "servers.a.env.K", &s).expect_err("an error");
        assert_eq!(e.field.as_deref(), Some("servers.a.env.K"));
        assert!(e.message.contains("MISSING"), "{e}");
        let e = expand("${TOKEN", "servers.a.headers.Authorization", &s).expect_err("an error");
        assert!(!e.to_string().contains("sk-secret"));
        assert!(expand("${file:/nope}", "f", &s).expect_err("an error").message.contains("/nope"));
        assert!(expand("${a b}", "f", &s).is_err());
    }
}
