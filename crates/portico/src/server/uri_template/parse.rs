//! Parsing a template into literal and expression parts (RFC 6570 section 2), with errors that
//! say where and what is wrong.

use super::*;

pub(super) fn parse_parts(template: &str) -> Result<Vec<Part>, UriTemplateError> {
    let bytes = template.as_bytes();
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                let close = bytes[i + 1..].iter().position(|&b| b == b'{' || b == b'}').map(|p| p + i + 1);
                let close = match close {
                    Some(c) if bytes[c] == b'}' => c,
                    _ => return Err(err(i, UriTemplateErrorKind::UnclosedBrace)),
                };
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(parse_expression(template, i + 1, close)?);
                i = close + 1;
            }
            b'}' => return Err(err(i, UriTemplateErrorKind::UnmatchedCloseBrace)),
            b'%' => {
                if !(is_hex_at(bytes, i + 1) && is_hex_at(bytes, i + 2)) {
                    return Err(err(i, UriTemplateErrorKind::InvalidPercentEncoding));
                }
                literal.push_str(&template[i..i + 3]);
                i += 3;
            }
            b if b < 0x80 => {
                if b <= 0x20 || b == 0x7f || b"\"'<>\\^`|".contains(&b) {
                    return Err(err(i, UriTemplateErrorKind::InvalidLiteral));
                }
                if is_unreserved(b) || is_reserved(b) {
                    literal.push(char::from(b));
                } else {
                    push_pct(&mut literal, b);
                }
                i += 1;
            }
            _ => {
                // Non-ASCII: percent-encode the whole UTF-8 sequence.
                let ch_len = template[i..].chars().next().map_or(1, char::len_utf8);
                for &b in &bytes[i..i + ch_len] {
                    push_pct(&mut literal, b);
                }
                i += ch_len;
            }
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

/// Parse the expression between the braces: `template[start..end]`.
fn parse_expression(template: &str, start: usize, end: usize) -> Result<Part, UriTemplateError> {
    let bytes = template.as_bytes();
    if start == end {
        return Err(err(start - 1, UriTemplateErrorKind::EmptyExpression));
    }
    let (op, mut i) = match bytes[start] {
        b'+' => (Op::Reserved, start + 1),
        b'#' => (Op::Fragment, start + 1),
        b'.' => (Op::Label, start + 1),
        b'/' => (Op::Path, start + 1),
        b';' => (Op::PathParam, start + 1),
        b'?' => (Op::Query, start + 1),
        b'&' => (Op::QueryCont, start + 1),
        b'=' | b',' | b'!' | b'@' | b'|' => {
            return Err(err(start, UriTemplateErrorKind::ReservedOperator));
        }
        _ => (Op::Simple, start),
    };
    if i == end {
        return Err(err(start - 1, UriTemplateErrorKind::EmptyExpression));
    }
    let mut vars = Vec::new();
    loop {
        // varname
        let name_start = i;
        let mut prev_dot = true; // a name may not start with '.'
        while i < end {
            match bytes[i] {
                b'%' => {
                    if !(is_hex_at(bytes, i + 1) && is_hex_at(bytes, i + 2)) || i + 3 > end {
                        return Err(err(i, UriTemplateErrorKind::InvalidVariableName));
                    }
                    i += 3;
                    prev_dot = false;
                }
                b'.' => {
                    if prev_dot {
                        return Err(err(i, UriTemplateErrorKind::InvalidVariableName));
                    }
                    prev_dot = true;
                    i += 1;
                }
                b if b.is_ascii_alphanumeric() || b == b'_' => {
                    prev_dot = false;
                    i += 1;
                }
                _ => break,
            }
        }
        if i == name_start {
            return Err(err(i, UriTemplateErrorKind::InvalidVariableName));
        }
        if prev_dot {
            return Err(err(i - 1, UriTemplateErrorKind::InvalidVariableName));
        }
        let name = template[name_start..i].to_owned();
        // modifier
        let mut prefix = None;
        let mut explode = false;
        if i < end && bytes[i] == b':' {
            let digits_start = i + 1;
            let mut j = digits_start;
            while j < end && bytes[j].is_ascii_digit() {
                j += 1;
            }
            let digits = &template[digits_start..j];
            if digits.is_empty() || digits.len() > 4 || digits.starts_with('0') {
                return Err(err(digits_start, UriTemplateErrorKind::InvalidPrefix));
            }
            prefix = digits.parse::<u16>().ok();
            if prefix.is_none() {
                return Err(err(digits_start, UriTemplateErrorKind::InvalidPrefix));
            }
            i = j;
        } else if i < end && bytes[i] == b'*' {
            explode = true;
            i += 1;
        }
        vars.push(VarSpec { name, prefix, explode });
        if i == end {
            break;
        }
        match bytes[i] {
            b',' => i += 1,
            _ if prefix.is_some() || explode => {
                return Err(err(i, UriTemplateErrorKind::UnexpectedAfterModifier));
            }
            _ => return Err(err(i, UriTemplateErrorKind::InvalidVariableName)),
        }
    }
    Ok(Part::Expr { op, vars })
}
