//! Text to a [`Value`] tree, in each file format the clients use, with syntax errors placed at
//! their line and column. Messages never quote the text: it may hold a secret.

use serde_json::Value;

use crate::config::ConfigError;

/// Strict JSON (Claude Desktop, Claude Code, Cline).
pub(super) fn json(text: &str) -> Result<Value, ConfigError> {
    serde_json::from_str(text).map_err(|e| {
        // serde_json counts the column in bytes, at the byte after the offending one: turn it
        // back into an offset so that the column is in characters, like every other format's.
        let line_start = text.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum::<usize>();
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or_default();
        ConfigError::new(format!("invalid JSON: {message}")).at_offset(text, line_start + e.column().saturating_sub(1))
    })
}

/// JSON with comments and trailing commas (Zed, VS Code, Cursor, Windsurf: their editors write
/// and accept it), and nothing looser.
///
/// `jsonc-parser` (dprint's, also used by Deno) reads it straight into a `serde_json::Value`
/// and reports byte ranges, with no dependencies of its own.
pub(super) fn jsonc(text: &str) -> Result<Value, ConfigError> {
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    jsonc_parser::parse_to_serde_value::<Value>(text, &options)
        .map_err(|e| ConfigError::new(format!("invalid JSON: {}", e.kind())).at_offset(text, e.range().start))
}

/// TOML (Codex).
pub(super) fn toml(text: &str) -> Result<Value, ConfigError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| toml_error(text, &e, "invalid TOML: "))?;
    serde_json::to_value(table).map_err(|_| ConfigError::new("invalid TOML: a value cannot be read"))
}

/// A TOML error placed at its span, its message (after `prefix`) on one line and without any
/// value.
pub(super) fn toml_error(text: &str, e: &toml::de::Error, prefix: &str) -> ConfigError {
    let err = ConfigError::new(format!("{prefix}{}", redact(&e.message().trim_end().replace('\n', "; "))));
    match e.span() {
        Some(span) => err.at_offset(text, span.start),
        None => err,
    }
}

/// YAML (Goose).
///
/// `serde_yaml` is archived; `serde_yaml_ng` is its maintained continuation with the same API
/// (and error locations), and builds with the workspace's MSRV (1.85), which `serde-saphyr`
/// (1.89) does not.
pub(super) fn yaml(text: &str) -> Result<Value, ConfigError> {
    serde_yaml_ng::from_str(text).map_err(|e| {
        let message = e.to_string();
        let message = redact(message.split(" at line ").next().unwrap_or_default());
        let err = ConfigError::new(format!("invalid YAML: {message}"));
        match e.location() {
            Some(at) => err.at(at.line(), at.column()),
            None => err,
        }
    })
}

/// A serde message without the value it may quote: `invalid type: string "sk-…", expected a
/// sequence` becomes `invalid type: string, expected a sequence`.
pub(super) fn redact(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: ", "unknown variant "] {
        if let Some(at) = message.find(prefix) {
            let (before, rest) = (&message[..at], &message[at + prefix.len()..]);
            let kind = rest[..rest.find(['"', '`', '\'', ',']).unwrap_or(rest.len())].trim_end();
            let expected = rest.rfind(", expected").map_or("", |at| &rest[at..]);
            let head = format!("{before}{prefix}{kind}");
            return format!("{}{expected}", head.trim_end().trim_end_matches(':'));
        }
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_values_and_keeps_the_rest() {
        assert_eq!(
            redact(r#"invalid type: string "sk-secret", expected a sequence"#),
            "invalid type: string, expected a sequence"
        );
        assert_eq!(redact("invalid value: integer `-1`, expected u32"), "invalid value: integer, expected u32");
        assert_eq!(redact("invalid type: map, expected a string"), "invalid type: map, expected a string");
        assert_eq!(
            redact("unknown variant `sk-secret`, expected one of `a`, `b`"),
            "unknown variant, expected one of `a`, `b`"
        );
        assert_eq!(redact("a.b: invalid type: string \"x\", expected u8"), "a.b: invalid type: string, expected u8");
        assert_eq!(redact("expected `=`"), "expected `=`");
    }

    #[test]
    fn every_format_places_its_syntax_errors() {
        let e = json("{\n  \"a\": [1,, 2]\n}").expect_err("an error");
        assert_eq!((e.line, e.column), (Some(2), Some(11)), "{e}");
        assert!(e.message.starts_with("invalid JSON: "), "{e}");
        let e = jsonc("{\n  // ok\n  \"a\": [1, 2,],\n  \"b\" 3\n}").expect_err("an error");
        assert_eq!((e.line, e.column), (Some(4), Some(7)), "{e}");
        let e = toml("[a]\nb = \n").expect_err("an error");
        assert_eq!(e.line, Some(2), "{e}");
        let e = yaml("a:\n  b: 1\n c: 2\n").expect_err("an error");
        assert_eq!(e.line, Some(3), "{e}");
    }

    #[test]
    fn jsonc_reads_comments_and_trailing_commas() {
        let v = jsonc("{ /* x */ \"a\": \"// not a comment\", // y\n \"b\": [1, 2,], }").expect("no error");
        assert_eq!(v, serde_json::json!({"a": "// not a comment", "b": [1, 2]}));
    }
}
