//! RFC 6570 syntax check of resource templates at compile time: the same rules as
//! `portico::server::uri_template::UriTemplate::parse` (which this crate cannot depend on: portico
//! depends on it). `tests/uri_template.rs` includes this file and runs both on one corpus.

/// Why a template is invalid: byte offset and what is wrong (worded as portico words it).
#[derive(Debug, PartialEq, Eq)]
pub struct TemplateError {
    pub position: usize,
    pub what: &'static str,
}

fn fail<T>(position: usize, what: &'static str) -> Result<T, TemplateError> {
    Err(TemplateError { position, what })
}

const UNCLOSED: &str = "unclosed '{'";
const UNMATCHED: &str = "unmatched '}'";
const EMPTY: &str = "empty expression";
const RESERVED: &str = "reserved operator";
const BAD_NAME: &str = "invalid variable name";
const BAD_PREFIX: &str = "invalid prefix length (must be 1 to 9999)";
const AFTER_MODIFIER: &str = "unexpected character after modifier";
const BAD_LITERAL: &str = "character not allowed in a literal";
const BAD_PERCENT: &str = "'%' not followed by two hex digits";

fn hex_at(bytes: &[u8], i: usize) -> bool {
    bytes.get(i).is_some_and(u8::is_ascii_hexdigit)
}

/// The variable names of `template`, each once, in order of first appearance.
pub fn variables(template: &str) -> Result<Vec<String>, TemplateError> {
    let bytes = template.as_bytes();
    let mut names: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                let end = match bytes[i + 1..].iter().position(|&b| b == b'{' || b == b'}') {
                    Some(p) if bytes[i + 1 + p] == b'}' => i + 1 + p,
                    _ => return fail(i, UNCLOSED),
                };
                for name in expression(template, i + 1, end)? {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                i = end + 1;
            }
            b'}' => return fail(i, UNMATCHED),
            b'%' if !(hex_at(bytes, i + 1) && hex_at(bytes, i + 2)) => return fail(i, BAD_PERCENT),
            b'%' => i += 3,
            b if b <= 0x20 || b == 0x7f || b"\"'<>\\^`|".contains(&b) => return fail(i, BAD_LITERAL),
            _ => i += 1,
        }
    }
    Ok(names)
}

/// The names in the expression `template[start..end]` (between the braces).
fn expression(template: &str, start: usize, end: usize) -> Result<Vec<String>, TemplateError> {
    let bytes = template.as_bytes();
    let mut i = start;
    match bytes.get(i) {
        _ if i == end => return fail(start - 1, EMPTY),
        Some(b'+' | b'#' | b'.' | b'/' | b';' | b'?' | b'&') => i += 1,
        Some(b'=' | b',' | b'!' | b'@' | b'|') => return fail(i, RESERVED),
        _ => {}
    }
    if i == end {
        return fail(start - 1, EMPTY);
    }
    let mut names = Vec::new();
    loop {
        let name_start = i;
        // A name is letters, digits, `_` and percent triplets, with single dots inside.
        let mut after_dot = true;
        while i < end {
            match bytes[i] {
                b'%' if i + 3 <= end && hex_at(bytes, i + 1) && hex_at(bytes, i + 2) => {
                    i += 3;
                    after_dot = false;
                }
                b'%' => return fail(i, BAD_NAME),
                b'.' if after_dot => return fail(i, BAD_NAME),
                b'.' => {
                    after_dot = true;
                    i += 1;
                }
                b if b.is_ascii_alphanumeric() || b == b'_' => {
                    after_dot = false;
                    i += 1;
                }
                _ => break,
            }
        }
        if i == name_start {
            return fail(i, BAD_NAME);
        }
        if after_dot {
            return fail(i - 1, BAD_NAME);
        }
        names.push(template[name_start..i].to_owned());
        let mut modifier = false;
        if i < end && bytes[i] == b':' {
            let digits = i + 1;
            let mut j = digits;
            while j < end && bytes[j].is_ascii_digit() {
                j += 1;
            }
            if j == digits || j - digits > 4 || bytes[digits] == b'0' {
                return fail(digits, BAD_PREFIX);
            }
            modifier = true;
            i = j;
        } else if i < end && bytes[i] == b'*' {
            modifier = true;
            i += 1;
        }
        if i == end {
            return Ok(names);
        }
        match bytes[i] {
            b',' => i += 1,
            _ if modifier => return fail(i, AFTER_MODIFIER),
            _ => return fail(i, BAD_NAME),
        }
    }
}
