//! The YAML frontmatter of a `SKILL.md`, parsed into JSON to compare with a skill entry.
//!
//! Frontmatter is a small YAML mapping (`name`, `description`, `license`, `metadata`,
//! `allowed-tools`, …). This parser reads the subset such mappings use — block mappings and
//! sequences, plain and quoted scalars, flow sequences and mappings of scalars, literal and
//! folded block scalars, comments — with YAML 1.2 core-schema typing. Anything else (anchors,
//! aliases, tags, complex keys, several documents) is refused: a skill whose frontmatter
//! cannot be read exactly is not loaded.

use serde_json::{Map, Number, Value};

/// Splits `text` into its frontmatter (the YAML between the opening and closing `---`) and
/// the body after it. `None` when the file does not start with a frontmatter block.
pub(crate) fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---\r\n").or_else(|| text.strip_prefix("---\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" {
            let yaml = &rest[..offset];
            return Some((yaml, &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// Parses frontmatter YAML into a JSON object.
pub(crate) fn parse(yaml: &str) -> Result<Map<String, Value>, String> {
    let lines: Vec<Line<'_>> = yaml
        .lines()
        .enumerate()
        .filter_map(|(n, raw)| {
            let raw = raw.trim_end_matches('\r');
            let content = raw.trim_start_matches(' ');
            (!content.is_empty() && !content.starts_with('#')).then_some(Line {
                n: n + 1,
                indent: raw.len() - content.len(),
                raw,
                content,
            })
        })
        .collect();
    if let Some(tab) = lines.iter().find(|l| l.content.starts_with('\t')) {
        return Err(format!("line {}: tabs cannot indent YAML", tab.n));
    }
    let mut p = Parser { lines: &lines, at: 0, all: yaml.lines().collect() };
    if lines.is_empty() {
        return Ok(Map::new());
    }
    match p.block(lines[0].indent)? {
        Value::Object(m) if p.at == lines.len() => Ok(m),
        Value::Object(_) => Err(format!("line {}: unexpected indentation", lines[p.at].n)),
        _ => Err("the frontmatter is not a mapping".into()),
    }
}

#[derive(Debug)]
struct Line<'a> {
    /// 1-based line number in the YAML.
    n: usize,
    indent: usize,
    raw: &'a str,
    content: &'a str,
}

struct Parser<'a> {
    /// Lines with content.
    lines: &'a [Line<'a>],
    at: usize,
    /// Every line, for block scalars (which keep blank lines).
    all: Vec<&'a str>,
}

impl Parser<'_> {
    /// A block node whose lines are indented by exactly `indent`.
    fn block(&mut self, indent: usize) -> Result<Value, String> {
        let first = &self.lines[self.at];
        if first.content == "-" || first.content.starts_with("- ") {
            self.sequence(indent)
        } else {
            self.mapping(indent)
        }
    }

    fn mapping(&mut self, indent: usize) -> Result<Value, String> {
        let mut out = Map::new();
        while let Some(line) = self.lines.get(self.at) {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return Err(format!("line {}: unexpected indentation", line.n));
            }
            let (key, rest) = key_value(line.content).map_err(|e| format!("line {}: {e}", line.n))?;
            let n = line.n;
            self.at += 1;
            let value = self.value_after(rest, indent, n, true)?;
            if out.insert(key.clone(), value).is_some() {
                return Err(format!("line {n}: key {key:?} appears twice"));
            }
        }
        Ok(Value::Object(out))
    }

    fn sequence(&mut self, indent: usize) -> Result<Value, String> {
        let mut out = Vec::new();
        while let Some(line) = self.lines.get(self.at) {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return Err(format!("line {}: unexpected indentation", line.n));
            }
            let Some(rest) = line.content.strip_prefix('-').filter(|r| r.is_empty() || r.starts_with(' ')) else {
                // The end of a sequence written at its key's indentation.
                break;
            };
            let n = line.n;
            let item = rest.trim_start_matches(' ');
            if !item.is_empty() && !item.starts_with('#') && key_value(item).is_ok() {
                // `- key: value`: a mapping whose first key sits after the dash.
                let inner = indent + (line.content.len() - item.len());
                let mut shifted: Vec<Line<'_>> = Vec::new();
                shifted.push(Line { n, indent: inner, raw: line.raw, content: item });
                let mut end = self.at + 1;
                while let Some(l) = self.lines.get(end).filter(|l| l.indent >= inner) {
                    shifted.push(Line { n: l.n, indent: l.indent, raw: l.raw, content: l.content });
                    end += 1;
                }
                let mut sub = Parser { lines: &shifted, at: 0, all: self.all.clone() };
                let value = sub.mapping(inner)?;
                if sub.at != shifted.len() {
                    return Err(format!("line {}: unexpected indentation", shifted[sub.at].n));
                }
                self.at = end;
                out.push(value);
                continue;
            }
            self.at += 1;
            out.push(self.value_after(item, indent, n, false)?);
        }
        Ok(Value::Array(out))
    }

    /// The value after `key:` or `-` on line `n`: inline, a block scalar, or a nested block.
    fn value_after(&mut self, rest: &str, indent: usize, n: usize, in_mapping: bool) -> Result<Value, String> {
        let rest = strip_comment(rest).trim();
        if rest.starts_with('|') || rest.starts_with('>') {
            return self.block_scalar(rest, indent, n);
        }
        if !rest.is_empty() {
            return self.inline(rest, indent, n);
        }
        match self.lines.get(self.at) {
            Some(next) if next.indent > indent => {
                let i = next.indent;
                self.block(i)
            }
            // A sequence may sit at its key's own indentation.
            Some(next)
                if in_mapping && next.indent == indent && (next.content == "-" || next.content.starts_with("- ")) =>
            {
                self.sequence(indent)
            }
            _ => Ok(Value::Null),
        }
    }

    /// An inline value, with the continuation lines of a multi-line plain or quoted scalar.
    fn inline(&mut self, first: &str, indent: usize, n: usize) -> Result<Value, String> {
        let mut text = first.to_owned();
        let plain = !first.starts_with(['"', '\'', '[', '{']);
        while let Some(next) = self.lines.get(self.at).filter(|l| l.indent > indent) {
            if plain && key_value(next.content).is_ok() {
                return Err(format!("line {}: a mapping under a scalar", next.n));
            }
            text.push(' ');
            text.push_str(next.content.trim());
            self.at += 1;
        }
        scalar_or_flow(&text).map_err(|e| format!("line {n}: {e}"))
    }

    /// `|` or `>` with optional chomping (`-`, `+`); the text is the more-indented lines after.
    fn block_scalar(&mut self, header: &str, indent: usize, n: usize) -> Result<Value, String> {
        let folded = header.starts_with('>');
        let chomp = match &header[1..] {
            "" => Chomp::Clip,
            "-" => Chomp::Strip,
            "+" => Chomp::Keep,
            other => return Err(format!("line {n}: block scalar indicator {other:?} is not supported")),
        };
        // Take every line up to the next content line at or above `indent`.
        while self.lines.get(self.at).is_some_and(|l| l.indent > indent) {
            self.at += 1;
        }
        // `n` (1-based) is the header's line, so `all[n]` is the first line after it.
        let start = n;
        let end = self.lines.get(self.at).map_or(self.all.len(), |l| l.n - 1);
        let body: Vec<&str> = self.all[start.min(end)..end].iter().map(|l| l.trim_end_matches('\r')).collect();
        let Some(block_indent) =
            body.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start_matches(' ').len()).min()
        else {
            return Ok(Value::String(String::new()));
        };
        if block_indent <= indent {
            return Err(format!("line {n}: block scalar is not indented"));
        }
        let lines: Vec<&str> = body.iter().map(|l| l.get(block_indent..).unwrap_or("")).collect();
        let mut text = String::new();
        if folded {
            let mut prev_blank = true;
            for l in &lines {
                if l.is_empty() {
                    text.push('\n');
                    prev_blank = true;
                } else {
                    if !prev_blank && !l.starts_with(' ') {
                        text.push(' ');
                    }
                    text.push_str(l);
                    prev_blank = false;
                }
            }
            text.push('\n');
        } else {
            for l in &lines {
                text.push_str(l);
                text.push('\n');
            }
        }
        let trimmed = text.trim_end_matches('\n');
        Ok(Value::String(match chomp {
            Chomp::Strip => trimmed.to_owned(),
            Chomp::Clip if trimmed.is_empty() => String::new(),
            Chomp::Clip => format!("{trimmed}\n"),
            Chomp::Keep => text,
        }))
    }
}

enum Chomp {
    Strip,
    Clip,
    Keep,
}

/// Splits `key: rest`; the key is plain or quoted.
fn key_value(content: &str) -> Result<(String, &str), String> {
    if content.starts_with(['?', '&', '*', '!', '|', '>', '%', '@', '`']) {
        return Err(format!("{content:?} uses YAML this parser does not read"));
    }
    if content.starts_with('"') || content.starts_with('\'') {
        let (key, len) = quoted(content)?;
        let rest = content[len..].trim_start_matches(' ');
        let rest = rest.strip_prefix(':').ok_or("a quoted key without ':'")?;
        if !(rest.is_empty() || rest.starts_with(' ')) {
            return Err("':' must be followed by a space".into());
        }
        return Ok((key, rest));
    }
    let colon = content
        .char_indices()
        .find(|&(i, c)| c == ':' && content[i + 1..].chars().next().is_none_or(|n| n == ' '))
        .map(|(i, _)| i)
        .ok_or("expected `key: value`")?;
    let key = content[..colon].trim_end();
    if key.is_empty() || key.contains(" #") {
        return Err("expected `key: value`".into());
    }
    Ok((key.to_owned(), &content[colon + 1..]))
}

/// Drops a ` #` comment that is not inside quotes or brackets' quoted strings.
fn strip_comment(s: &str) -> &str {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && (prev == ' ' || prev == '\t') => return &s[..i],
            None => {}
        }
        prev = c;
    }
    s
}

/// A scalar, or a flow sequence or mapping of scalars.
fn scalar_or_flow(s: &str) -> Result<Value, String> {
    let s = s.trim();
    if s.starts_with('[') || s.starts_with('{') {
        let (v, len) = flow(s)?;
        if !s[len..].trim().is_empty() {
            return Err(format!("unexpected text after {:?}", &s[..len]));
        }
        return Ok(v);
    }
    if s.starts_with('"') || s.starts_with('\'') {
        let (v, len) = quoted(s)?;
        if !s[len..].trim().is_empty() {
            return Err("unexpected text after a quoted string".into());
        }
        return Ok(Value::String(v));
    }
    plain(s)
}

/// A flow collection at the start of `s`, and its length.
fn flow(s: &str) -> Result<(Value, usize), String> {
    let open = s.chars().next().ok_or("empty")?;
    let close = if open == '[' { ']' } else { '}' };
    let mut items = Vec::new();
    let mut map = Map::new();
    let mut i = 1;
    loop {
        let rest = &s[i..];
        let skipped = rest.len() - rest.trim_start().len();
        i += skipped;
        let rest = &s[i..];
        if rest.starts_with(close) {
            i += 1;
            break;
        }
        // One item: quoted, nested flow, or plain up to `,` / close.
        let (item, len) = if rest.starts_with('"') || rest.starts_with('\'') {
            let (v, len) = quoted(rest)?;
            (Value::String(v), len)
        } else if rest.starts_with('[') || rest.starts_with('{') {
            flow(rest)?
        } else {
            let end = plain_end(rest, close, open == '{').ok_or("an unclosed flow collection")?;
            (plain(rest[..end].trim())?, end)
        };
        i += len;
        let rest = s[i..].trim_start();
        i = s.len() - rest.len();
        if open == '{' {
            let Value::String(key) = item else { return Err("a flow mapping key must be a string".into()) };
            let rest = rest.strip_prefix(':').ok_or("a flow mapping entry without ':'")?;
            i += 1;
            let rest_t = rest.trim_start();
            i += rest.len() - rest_t.len();
            let (value, len) = if rest_t.starts_with('"') || rest_t.starts_with('\'') {
                let (v, len) = quoted(rest_t)?;
                (Value::String(v), len)
            } else if rest_t.starts_with('[') || rest_t.starts_with('{') {
                flow(rest_t)?
            } else {
                let end = rest_t.find([',', close]).ok_or("an unclosed flow mapping")?;
                (plain(rest_t[..end].trim())?, end)
            };
            i += len;
            map.insert(key, value);
        } else {
            items.push(item);
        }
        let rest = s[i..].trim_start();
        i = s.len() - rest.len();
        if rest.starts_with(',') {
            i += 1;
        } else if !rest.starts_with(close) {
            return Err("expected ',' in a flow collection".into());
        }
    }
    Ok((if open == '[' { Value::Array(items) } else { Value::Object(map) }, i))
}

/// Where a plain scalar in a flow collection ends: at `,` or the closing bracket, or (a
/// mapping key) at a `:` followed by a space or the end of the entry.
fn plain_end(s: &str, close: char, key: bool) -> Option<usize> {
    let bytes = s.as_bytes();
    s.char_indices().map(|(i, _)| i).find(|&i| match bytes[i] {
        b',' => true,
        b':' if key => bytes.get(i + 1).is_none_or(|n| matches!(n, b' ' | b',') || *n == close as u8),
        c => c == close as u8,
    })
}

/// A quoted string at the start of `s`, and its length in bytes.
fn quoted(s: &str) -> Result<(String, usize), String> {
    let q = s.chars().next().ok_or("empty")?;
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        if c == q {
            if q == '\'' && s[i + 1..].starts_with('\'') {
                out.push('\'');
                chars.next();
                continue;
            }
            return Ok((out, i + 1));
        }
        if c == '\\' && q == '"' {
            let (_, e) = chars.next().ok_or("an unfinished escape")?;
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '"' | '\\' | '/' | ' ' => out.push(e),
                'u' => {
                    let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, h)| h)).collect();
                    let code = u32::from_str_radix(&hex, 16).map_err(|_| "a bad \\u escape")?;
                    out.push(char::from_u32(code).ok_or("a \\u escape that is not a character")?);
                }
                other => return Err(format!("escape \\{other} is not supported")),
            }
            continue;
        }
        out.push(c);
    }
    Err("an unclosed quoted string".into())
}

/// A plain scalar, typed by the YAML 1.2 core schema.
fn plain(s: &str) -> Result<Value, String> {
    let s = strip_comment(s).trim();
    if s.starts_with(['&', '*', '!', '%', '@', '`', '|', '>']) {
        return Err(format!("{s:?} uses YAML this parser does not read"));
    }
    Ok(match s {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => number(s).unwrap_or_else(|| Value::String(s.to_owned())),
    })
}

fn number(s: &str) -> Option<Value> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        return s.trim_start_matches('+').parse::<i64>().ok().map(Value::from);
    }
    let ok = digits.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    if !ok {
        return None;
    }
    let f: f64 = s.trim_start_matches('+').parse().ok()?;
    Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(s: &str) -> Value {
        Value::Object(parse(s).unwrap_or_else(|e| panic!("{e}: {s}")))
    }

    #[test]
    fn splits_frontmatter_from_the_body() {
        let md = "---\nname: x\n---\n\nBody.\n";
        assert_eq!(split(md), Some(("name: x\n", "\nBody.\n")));
        assert_eq!(split("\u{feff}---\r\nname: x\r\n---\r\nB"), Some(("name: x\r\n", "B")));
        assert_eq!(split("no frontmatter"), None);
        assert_eq!(split("---\nname: x\n"), None, "unclosed");
    }

    #[test]
    fn reads_what_skill_frontmatter_uses() {
        let v = yaml(concat!(
            "name: pdf-processing\n",
            "description: Extract, fill, and assemble PDF documents\n",
            "license: \"Apache-2.0\" # a comment\n",
            "version: 1.5\n",
            "count: 3\n",
            "beta: true\n",
            "empty:\n",
            "quote: 'it''s: fine'\n",
            "allowed-tools: [Bash, \"Read\", 'Write', http://x/y]\n",
            "metadata:\n",
            "  author: someone\n",
            "  tags:\n",
            "    - pdf\n",
            "    - forms\n",
            "  nested: {a: 1, b: x}\n",
            "list_at_key_indent:\n",
            "- one\n",
            "- two\n",
            "items:\n",
            "  - name: a\n",
            "    size: 1\n",
            "  - name: b\n",
        ));
        assert_eq!(
            v,
            json!({
                "name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0", "version": 1.5, "count": 3, "beta": true, "empty": null,
                "quote": "it's: fine", "allowed-tools": ["Bash", "Read", "Write", "http://x/y"],
                "metadata": {"author": "someone", "tags": ["pdf", "forms"], "nested": {"a": 1, "b": "x"}},
                "list_at_key_indent": ["one", "two"],
                "items": [{"name": "a", "size": 1}, {"name": "b"}]
            })
        );
    }

    #[test]
    fn block_and_multi_line_scalars() {
        let v = yaml(
            "a: |\n  line one\n  line two\n\nb: >-\n  folded\n  text\n\n  para\nc: plain\n  continued\nd: \"esc \\u00e9\\n\"\n",
        );
        assert_eq!(
            v,
            json!({"a": "line one\nline two\n", "b": "folded text\npara", "c": "plain continued", "d": "esc é\n"})
        );
    }

    #[test]
    fn refuses_what_it_cannot_read_exactly() {
        for bad in [
            "a: &anchor x\n",
            "a: *alias\n",
            "a: !tag x\n",
            "? complex\n",
            "a: 1\na: 2\n",
            "a: [unclosed\n",
            "- a\n- b\n",
            "a: 1\n   b: 2\n",
            "a:\n\tb: 1\n",
            "just text\n",
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
        assert_eq!(parse("# only a comment\n"), Ok(Map::new()));
    }
}
