//! RFC 6570 URI templates, expanded (variables → URI) and matched
//! (URI → variables).
//!
//! MCP resource templates such as `file:///{path}`, `users://{id}/profile`
//! or `repo://{owner}/{repo}/issues{?state,page}` are used both ways: a client
//! expands them to build a resource URI, and a server matches an incoming
//! `resources/read` URI against them to find the handler and its arguments.
//!
//! * **Parsing** accepts the full RFC 6570 syntax (levels 1–4): the operators
//!   `+ # . / ; ? &`, several variables per expression, the explode (`*`) and
//!   prefix (`:n`) modifiers. Errors say where and what is wrong.
//! * **Expansion** follows RFC 6570 section 3.2 for string, list and
//!   associative-array values ([`VarValue`]), including each operator's
//!   percent-encoding rules.
//! * **Matching** is not defined by the RFC; see [`UriTemplate::matches`] for
//!   the rules used here. It runs in time linear in the URI length (a Pike
//!   VM over an automaton built once per template, no backtracking), and
//!   refuses URIs longer than [`MAX_MATCH_LEN`].
//!
//! ```
//! use portico::server::uri_template::UriTemplate;
//!
//! let t = UriTemplate::parse("repo://{owner}/{repo}/issues{?state,page}")?;
//! let m = t.matches("repo://rust-lang/rust/issues?page=2&state=open").expect("matches");
//! assert_eq!(m.get("owner"), Some("rust-lang"));
//! assert_eq!(m.get("state"), Some("open"));
//! assert_eq!(m.get("page"), Some("2"));
//!
//! let uri = t.expand_from([("owner", "a b"), ("repo", "r"), ("page", "1")]);
//! assert_eq!(uri, "repo://a%20b/r/issues?page=1");
//! # Ok::<(), portico::server::uri_template::UriTemplateError>(())
//! ```

use std::fmt;
use std::str::FromStr;

/// The longest URI [`UriTemplate::matches`] will consider, in bytes
/// (128 KiB). Longer URIs never match.
pub const MAX_MATCH_LEN: usize = 128 * 1024;

/// Why a template failed to parse, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template at byte {position}: {kind}")]
pub struct UriTemplateError {
    position: usize,
    kind: UriTemplateErrorKind,
}

impl UriTemplateError {
    /// Byte offset in the template where the problem was found.
    pub fn position(&self) -> usize {
        self.position
    }

    /// What is wrong.
    pub fn kind(&self) -> UriTemplateErrorKind {
        self.kind
    }
}

/// The kinds of [`UriTemplateError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UriTemplateErrorKind {
    /// A `{` without a matching `}`.
    #[error("unclosed '{{'")]
    UnclosedBrace,
    /// A `}` outside an expression.
    #[error("unmatched '}}'")]
    UnmatchedCloseBrace,
    /// `{}` or an operator with no variables, e.g. `{+}`.
    #[error("empty expression")]
    EmptyExpression,
    /// One of the operators RFC 6570 reserves for future use: `= , ! @ |`.
    #[error("reserved operator")]
    ReservedOperator,
    /// A variable name that is empty or has characters other than letters,
    /// digits, `_`, percent-encoded triplets and single inner dots.
    #[error("invalid variable name")]
    InvalidVariableName,
    /// A prefix modifier `:n` whose length is not a number from 1 to 9999.
    #[error("invalid prefix length (must be 1 to 9999)")]
    InvalidPrefix,
    /// Something other than `,` or `}` after a modifier.
    #[error("unexpected character after modifier")]
    UnexpectedAfterModifier,
    /// A character RFC 6570 does not allow in literals (controls, space,
    /// `"`, `'`, `<`, `>`, `\`, `^`, `` ` ``, `|`).
    #[error("character not allowed in a literal")]
    InvalidLiteral,
    /// A `%` not followed by two hexadecimal digits.
    #[error("'%' not followed by two hex digits")]
    InvalidPercentEncoding,
}

fn err(position: usize, kind: UriTemplateErrorKind) -> UriTemplateError {
    UriTemplateError { position, kind }
}

/// The value of a template variable, for [`UriTemplate::expand_values`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VarValue {
    /// A string.
    String(String),
    /// A list of strings; an empty list counts as undefined.
    List(Vec<String>),
    /// An associative array of name/value pairs, in order; an empty one
    /// counts as undefined.
    Map(Vec<(String, String)>),
}

impl From<String> for VarValue {
    fn from(s: String) -> Self {
        VarValue::String(s)
    }
}

impl From<&str> for VarValue {
    fn from(s: &str) -> Self {
        VarValue::String(s.to_owned())
    }
}

impl From<Vec<String>> for VarValue {
    fn from(items: Vec<String>) -> Self {
        VarValue::List(items)
    }
}

impl From<Vec<(String, String)>> for VarValue {
    fn from(pairs: Vec<(String, String)>) -> Self {
        VarValue::Map(pairs)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryCont,
}

impl Op {
    fn first(self) -> Option<u8> {
        match self {
            Op::Simple | Op::Reserved => None,
            Op::Fragment => Some(b'#'),
            Op::Label => Some(b'.'),
            Op::Path => Some(b'/'),
            Op::PathParam => Some(b';'),
            Op::Query => Some(b'?'),
            Op::QueryCont => Some(b'&'),
        }
    }

    fn sep(self) -> u8 {
        match self {
            Op::Simple | Op::Reserved | Op::Fragment => b',',
            Op::Label => b'.',
            Op::Path => b'/',
            Op::PathParam => b';',
            Op::Query | Op::QueryCont => b'&',
        }
    }

    fn named(self) -> bool {
        matches!(self, Op::PathParam | Op::Query | Op::QueryCont)
    }

    fn ifemp(self) -> &'static str {
        match self {
            Op::Query | Op::QueryCont => "=",
            _ => "",
        }
    }

    fn allow_reserved(self) -> bool {
        matches!(self, Op::Reserved | Op::Fragment)
    }

    /// Bytes a matched value may never contain (besides the separator).
    fn excluded(self) -> &'static [u8] {
        match self {
            Op::Simple => b"/?#",
            Op::Reserved | Op::Fragment => b"",
            Op::Label => b"/?#.",
            Op::Path => b"/?#",
            Op::PathParam => b"/?#;",
            Op::Query | Op::QueryCont => b"&#",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    prefix: Option<u16>,
    explode: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Literal text, already in its expanded (percent-encoded) form.
    Literal(String),
    Expr {
        op: Op,
        vars: Vec<VarSpec>,
    },
}

/// A parsed RFC 6570 URI template.
///
/// Parse once with [`parse`](Self::parse), then [`expand`](Self::expand) or
/// [`matches`](Self::matches) as often as needed.
#[derive(Clone)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
    names: Vec<String>,
    matcher: Matcher,
}

impl fmt::Debug for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UriTemplate").field(&self.source).finish()
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl PartialEq for UriTemplate {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for UriTemplate {}

impl std::hash::Hash for UriTemplate {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.source.hash(state);
    }
}

impl FromStr for UriTemplate {
    type Err = UriTemplateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl UriTemplate {
    /// Parse a template.
    pub fn parse(template: &str) -> Result<Self, UriTemplateError> {
        let parts = parse_parts(template)?;
        let mut names: Vec<String> = Vec::new();
        for part in &parts {
            if let Part::Expr { vars, .. } = part {
                for v in vars {
                    if !names.contains(&v.name) {
                        names.push(v.name.clone());
                    }
                }
            }
        }
        let matcher = Matcher::compile(&parts);
        Ok(UriTemplate { source: template.to_owned(), parts, names, matcher })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, each once, in order of first appearance.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Whether the template has no expressions at all.
    pub fn is_literal(&self) -> bool {
        self.names.is_empty()
    }

    /// Expand with string values; `lookup` returns `None` for undefined
    /// variables, which are left out as RFC 6570 specifies.
    pub fn expand(&self, lookup: impl Fn(&str) -> Option<String>) -> String {
        self.expand_values(|name| lookup(name).map(VarValue::String))
    }

    /// Expand with string values given as name/value pairs (a map, a slice of
    /// tuples, ...). Names not given are undefined.
    pub fn expand_from<I, K, V>(&self, vars: I) -> String
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let vars: Vec<(K, V)> = vars.into_iter().collect();
        self.expand(|name| vars.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v.as_ref().to_owned()))
    }

    /// Expand with string, list or associative-array values (RFC 6570 level 4).
    pub fn expand_values(&self, lookup: impl Fn(&str) -> Option<VarValue>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Expr { op, vars } => {
                    let mut first = true;
                    for var in vars {
                        let Some(value) = lookup(&var.name) else {
                            continue;
                        };
                        match &value {
                            VarValue::List(items) if items.is_empty() => continue,
                            VarValue::Map(pairs) if pairs.is_empty() => continue,
                            _ => {}
                        }
                        if first {
                            if let Some(b) = op.first() {
                                out.push(char::from(b));
                            }
                            first = false;
                        } else {
                            out.push(char::from(op.sep()));
                        }
                        expand_var(&mut out, *op, var, &value);
                    }
                }
            }
        }
        out
    }

    /// Match `uri` against the template, returning the percent-decoded
    /// variable values, or `None` if it does not match.
    ///
    /// The rules (RFC 6570 defines expansion only):
    ///
    /// * Literals must match exactly (byte for byte, after the template's
    ///   own literal has been percent-encoded as expansion would).
    /// * `{var}` matches one or more characters other than `/`, `?` and `#`;
    ///   with several variables, `{x,y}` splits on `,`.
    /// * `{+var}` matches one or more characters of any kind, `/` included;
    ///   `{#var}` matches an optional `#` followed by anything.
    /// * `{.var}`, `{/var}` and `{;var}` match an optional `.`, `/` or `;`
    ///   prefixed part that does not contain `/`, `?`, `#` (nor the
    ///   operator's separator, except for exploded variables).
    /// * `{?a,b}` (and `{&a,b}`, together with any `{&...}` expressions that
    ///   directly follow) matches an optional query part whose parameters
    ///   appear in any order, each at most once, each optional. A parameter
    ///   not named in the template, or an invalid percent-encoding, makes the
    ///   match fail. `+` is not decoded as a space.
    /// * Where the URI could be split in more than one way, each variable
    ///   takes the shortest extent that lets the rest of the template match
    ///   (so `file:///{+path}{?q}` leaves the query to `q`).
    /// * Exploded variables (`{/list*}`) yield their items joined by the
    ///   operator's separator; named exploded variables (`{?tag*}`) yield
    ///   repeated values joined by `,`. A prefix variable (`{v:3}`) only
    ///   matches values of at most that many characters. A variable used
    ///   twice must match the same value both times.
    /// * Undefined (absent) variables are simply missing from the result.
    ///
    /// Decoded values may contain any character, including `/` and `..`
    /// (`file:///{path}` matches `file:///..%2Fetc`): validate them before
    /// using them as paths.
    pub fn matches(&self, uri: &str) -> Option<UriMatch> {
        if uri.len() > MAX_MATCH_LEN {
            return None;
        }
        self.matcher.run(uri.as_bytes())
    }
}

/// The variables extracted by [`UriTemplate::matches`], in template order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UriMatch {
    vars: Vec<(String, String)>,
}

impl UriMatch {
    /// The decoded value of variable `name`, if it was present in the URI.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Name/value pairs, in order of the variables' first appearance in the
    /// template.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// How many variables were matched.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether no variables were matched.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The name/value pairs.
    pub fn into_vec(self) -> Vec<(String, String)> {
        self.vars
    }
}

impl IntoIterator for UriMatch {
    type Item = (String, String);
    type IntoIter = std::vec::IntoIter<(String, String)>;

    fn into_iter(self) -> Self::IntoIter {
        self.vars.into_iter()
    }
}

impl<'a> IntoIterator for &'a UriMatch {
    type Item = (&'a str, &'a str);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, (String, String)>, fn(&'a (String, String)) -> (&'a str, &'a str)>;

    fn into_iter(self) -> Self::IntoIter {
        let f: fn(&'a (String, String)) -> (&'a str, &'a str) = |(k, v)| (k.as_str(), v.as_str());
        self.vars.iter().map(f)
    }
}

// ---------------------------------------------------------------------------
// Parsing

fn parse_parts(template: &str) -> Result<Vec<Part>, UriTemplateError> {
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

fn is_hex_at(bytes: &[u8], i: usize) -> bool {
    bytes.get(i).is_some_and(u8::is_ascii_hexdigit)
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn is_reserved(b: u8) -> bool {
    matches!(
        b,
        b':' | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}

// ---------------------------------------------------------------------------
// Expansion

fn push_pct(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 0xf)]));
}

fn encode(out: &mut String, value: &str, allow_reserved: bool) {
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if is_unreserved(b) || (allow_reserved && is_reserved(b)) {
            out.push(char::from(b));
        } else if allow_reserved && b == b'%' && is_hex_at(bytes, i + 1) && is_hex_at(bytes, i + 2) {
            out.push_str(&value[i..i + 3]);
            i += 3;
            continue;
        } else {
            push_pct(out, b);
        }
        i += 1;
    }
}

fn truncate_chars(s: &str, n: u16) -> &str {
    match s.char_indices().nth(usize::from(n)) {
        Some((idx, _)) => &s[..idx],
        None => s,
    }
}

fn expand_var(out: &mut String, op: Op, var: &VarSpec, value: &VarValue) {
    let allow = op.allow_reserved();
    let sep = char::from(op.sep());
    match value {
        VarValue::String(s) => {
            if op.named() {
                out.push_str(&var.name);
                if s.is_empty() {
                    out.push_str(op.ifemp());
                    return;
                }
                out.push('=');
            }
            let s = match var.prefix {
                Some(n) => truncate_chars(s, n),
                None => s,
            };
            encode(out, s, allow);
        }
        VarValue::List(items) if !var.explode => {
            if op.named() {
                out.push_str(&var.name);
                out.push('=');
            }
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode(out, item, allow);
            }
        }
        VarValue::Map(pairs) if !var.explode => {
            if op.named() {
                out.push_str(&var.name);
                out.push('=');
            }
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode(out, k, allow);
                out.push(',');
                encode(out, v, allow);
            }
        }
        VarValue::List(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(sep);
                }
                if op.named() {
                    out.push_str(&var.name);
                    if item.is_empty() {
                        out.push_str(op.ifemp());
                        continue;
                    }
                    out.push('=');
                }
                encode(out, item, allow);
            }
        }
        VarValue::Map(pairs) => {
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(sep);
                }
                encode(out, k, allow);
                if op.named() && v.is_empty() {
                    out.push_str(op.ifemp());
                    continue;
                }
                out.push('=');
                encode(out, v, allow);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Matching: a Thompson NFA run as a Pike VM.

#[derive(Debug, Clone, Copy)]
enum Inst {
    /// Consume this byte.
    Byte(u8),
    /// Consume one byte from class `n`.
    Class(usize),
    /// Try the first target, then (lower priority) the second.
    Split(usize, usize),
    Jmp(usize),
    /// Record the current position in slot `n`.
    Save(usize),
    /// Succeeds at the end of input.
    Match,
}

/// One expression (or run of query expressions) as seen by the matcher.
#[derive(Debug, Clone)]
struct Region {
    op: Op,
    vars: Vec<VarSpec>,
}

impl Region {
    /// A lone string-ish variable whose value may contain the separator.
    fn whole(&self) -> bool {
        self.vars.len() == 1 && matches!(self.op, Op::Simple | Op::Reserved | Op::Fragment)
    }
}

#[derive(Debug, Clone)]
struct Matcher {
    prog: Vec<Inst>,
    classes: Vec<[bool; 256]>,
    regions: Vec<Region>,
}

struct Compiler {
    prog: Vec<Inst>,
    classes: Vec<[bool; 256]>,
}

impl Compiler {
    fn emit(&mut self, inst: Inst) -> usize {
        self.prog.push(inst);
        self.prog.len() - 1
    }

    fn pc(&self) -> usize {
        self.prog.len()
    }

    fn patch_split(&mut self, at: usize, first: usize, second: usize) {
        self.prog[at] = Inst::Split(first, second);
    }

    /// `class*` (or `class+`), preferring to stop early.
    fn item(&mut self, class: usize, at_least_one: bool) {
        if at_least_one {
            self.emit(Inst::Class(class));
        }
        let split = self.emit(Inst::Split(0, 0));
        let body = self.emit(Inst::Class(class));
        self.emit(Inst::Jmp(split));
        let exit = self.pc();
        self.patch_split(split, exit, body);
    }

    fn region(&mut self, index: usize, region: &Region) {
        let op = region.op;
        let sep = op.sep();
        let mut class = [true; 256];
        for &b in op.excluded() {
            class[usize::from(b)] = false;
        }
        if !region.whole() {
            class[usize::from(sep)] = false;
        }
        self.classes.push(class);
        let class = self.classes.len() - 1;

        self.emit(Inst::Save(2 * index));
        let mut to_end = Vec::new();
        let first = op.first();
        if let Some(first) = first {
            // Optional: prefer skipping.
            let split = self.emit(Inst::Split(0, 0));
            to_end.push(split);
            self.emit(Inst::Byte(first));
        }
        self.item(class, first.is_none());
        let unbounded = !region.whole() && region.vars.iter().any(|v| v.explode);
        if unbounded {
            let split = self.emit(Inst::Split(0, 0));
            to_end.push(split);
            self.emit(Inst::Byte(sep));
            self.item(class, false);
            self.emit(Inst::Jmp(split));
        } else if !region.whole() {
            for _ in 1..region.vars.len() {
                let split = self.emit(Inst::Split(0, 0));
                to_end.push(split);
                self.emit(Inst::Byte(sep));
                self.item(class, false);
            }
        }
        let end = self.emit(Inst::Save(2 * index + 1));
        for split in to_end {
            // Every split here prefers ending the region; its other target is
            // the instruction right after it.
            self.patch_split(split, end, split + 1);
        }
    }
}

impl Matcher {
    fn compile(parts: &[Part]) -> Self {
        let mut c = Compiler { prog: Vec::new(), classes: Vec::new() };
        let mut regions: Vec<Region> = Vec::new();
        let mut prev_query = false;
        // First group parts into literal bytes and regions.
        enum Piece<'a> {
            Lit(&'a str),
            Region(usize),
        }
        let mut pieces = Vec::new();
        for part in parts {
            match part {
                Part::Literal(text) => {
                    pieces.push(Piece::Lit(text));
                    prev_query = false;
                }
                Part::Expr { op, vars } => {
                    if prev_query && *op == Op::QueryCont {
                        if let Some(last) = regions.last_mut() {
                            last.vars.extend(vars.iter().cloned());
                            continue;
                        }
                    }
                    prev_query = matches!(op, Op::Query | Op::QueryCont);
                    regions.push(Region { op: *op, vars: vars.clone() });
                    pieces.push(Piece::Region(regions.len() - 1));
                }
            }
        }
        for piece in &pieces {
            match piece {
                Piece::Lit(text) => {
                    for &b in text.as_bytes() {
                        c.emit(Inst::Byte(b));
                    }
                }
                Piece::Region(index) => c.region(*index, &regions[*index]),
            }
        }
        c.emit(Inst::Match);
        Matcher { prog: c.prog, classes: c.classes, regions }
    }

    fn run(&self, input: &[u8]) -> Option<UriMatch> {
        let slots = self.pike(input)?;
        let mut out: Vec<(String, String)> = Vec::new();
        for (i, region) in self.regions.iter().enumerate() {
            let start = *slots.get(2 * i)?;
            let end = *slots.get(2 * i + 1)?;
            let text = input.get(start..end)?;
            extract(region, text, &mut out)?;
        }
        Some(UriMatch { vars: out })
    }

    /// Run the automaton; the slots of the highest-priority full match.
    /// Work is O(input length × program length).
    fn pike(&self, input: &[u8]) -> Option<Vec<usize>> {
        let nslots = self.regions.len() * 2;
        let mut vm = Vm { prog: &self.prog, visited: vec![0; self.prog.len()], generation: 1, stack: Vec::new() };
        let mut clist = Threads::default();
        let mut nlist = Threads::default();
        let mut scratch = vec![usize::MAX; nslots];
        vm.add(&mut clist, 0, &mut scratch, 0);
        for pos in 0..=input.len() {
            if clist.pcs.is_empty() {
                return None;
            }
            vm.generation += 1;
            nlist.clear();
            let byte = input.get(pos).copied();
            for t in 0..clist.pcs.len() {
                let pc = clist.pcs[t];
                let slots = &clist.slots[t * nslots..(t + 1) * nslots];
                let advance = match (self.prog[pc], byte) {
                    (Inst::Match, None) => return Some(slots.to_vec()),
                    (Inst::Byte(want), Some(b)) => want == b,
                    (Inst::Class(class), Some(b)) => self.classes[class][usize::from(b)],
                    _ => false,
                };
                if advance {
                    scratch.copy_from_slice(slots);
                    vm.add(&mut nlist, pc + 1, &mut scratch, pos + 1);
                }
            }
            std::mem::swap(&mut clist, &mut nlist);
        }
        None
    }
}

#[derive(Default)]
struct Threads {
    pcs: Vec<usize>,
    slots: Vec<usize>,
}

impl Threads {
    fn clear(&mut self) {
        self.pcs.clear();
        self.slots.clear();
    }
}

enum Frame {
    Explore(usize),
    Restore(usize, usize),
}

struct Vm<'a> {
    prog: &'a [Inst],
    visited: Vec<u64>,
    generation: u64,
    stack: Vec<Frame>,
}

impl Vm<'_> {
    /// Follow ε-transitions from `pc`, adding consuming states to `list` in
    /// priority order. Each state is added at most once per position.
    fn add(&mut self, list: &mut Threads, pc: usize, slots: &mut [usize], pos: usize) {
        let generation = self.generation;
        self.stack.push(Frame::Explore(pc));
        while let Some(frame) = self.stack.pop() {
            match frame {
                Frame::Restore(slot, old) => slots[slot] = old,
                Frame::Explore(pc) => {
                    if self.visited[pc] == generation {
                        continue;
                    }
                    self.visited[pc] = generation;
                    match self.prog[pc] {
                        Inst::Jmp(to) => self.stack.push(Frame::Explore(to)),
                        Inst::Split(first, second) => {
                            self.stack.push(Frame::Explore(second));
                            self.stack.push(Frame::Explore(first));
                        }
                        Inst::Save(slot) => {
                            self.stack.push(Frame::Restore(slot, slots[slot]));
                            slots[slot] = pos;
                            self.stack.push(Frame::Explore(pc + 1));
                        }
                        Inst::Byte(_) | Inst::Class(_) | Inst::Match => {
                            list.pcs.push(pc);
                            list.slots.extend_from_slice(slots);
                        }
                    }
                }
            }
        }
    }
}

/// Turn the text matched by one region into variables.
fn extract(region: &Region, text: &[u8], out: &mut Vec<(String, String)>) -> Option<()> {
    if text.is_empty() {
        return Some(()); // skipped: every variable undefined
    }
    let op = region.op;
    let content = if op.first().is_some() { &text[1..] } else { text };
    let sep = op.sep();
    if op.named() {
        let mut seen: Vec<(usize, Vec<String>)> = Vec::new();
        for item in content.split(|&b| b == sep) {
            if item.is_empty() {
                continue;
            }
            let (name, value) = match item.iter().position(|&b| b == b'=') {
                Some(eq) => (&item[..eq], &item[eq + 1..]),
                None => (item, &b""[..]),
            };
            let index = region.vars.iter().position(|v| v.name.as_bytes() == name)?;
            let value = percent_decode(value)?;
            match seen.iter_mut().find(|(i, _)| *i == index) {
                Some((_, values)) if region.vars[index].explode => values.push(value),
                Some(_) => return None, // repeated parameter
                None => seen.push((index, vec![value])),
            }
        }
        // Report in template order.
        seen.sort_by_key(|(i, _)| *i);
        for (index, values) in seen {
            let var = &region.vars[index];
            set(out, var, values.join(","))?;
        }
        return Some(());
    }
    if region.whole() {
        return set(out, &region.vars[0], percent_decode(content)?);
    }
    let items: Vec<&[u8]> = content.split(|&b| b == sep).collect();
    // Surplus items (only possible with an exploded variable) all go to the
    // first exploded variable.
    let mut extra = items.len().saturating_sub(region.vars.len());
    let mut next = 0;
    for var in &region.vars {
        let Some(&item) = items.get(next) else {
            break;
        };
        if var.explode && extra > 0 {
            let mut joined = Vec::new();
            for part in &items[next..=next + extra] {
                joined.push(percent_decode(part)?);
            }
            next += extra + 1;
            extra = 0;
            set(out, var, joined.join(&char::from(sep).to_string()))?;
        } else {
            next += 1;
            set(out, var, percent_decode(item)?)?;
        }
    }
    Some(())
}

/// Record `value` for `var`, checking its prefix length and that a variable
/// used twice has the same value each time.
fn set(out: &mut Vec<(String, String)>, var: &VarSpec, value: String) -> Option<()> {
    if let Some(n) = var.prefix {
        if value.chars().count() > usize::from(n) {
            return None;
        }
    }
    match out.iter().find(|(k, _)| *k == var.name) {
        Some((_, existing)) if *existing == value => Some(()),
        Some(_) => None,
        None => {
            out.push((var.name.clone(), value));
            Some(())
        }
    }
}

fn percent_decode(raw: &[u8]) -> Option<String> {
    fn hex(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        }
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hi = hex(*raw.get(i + 1)?)?;
            let lo = hex(*raw.get(i + 2)?)?;
            out.push((hi << 4) | lo);
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> UriTemplate {
        UriTemplate::parse(s).expect("template parses")
    }

    fn m(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        t(template).matches(uri).map(UriMatch::into_vec)
    }

    fn pairs(p: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(p.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
    }

    fn rfc_vars(name: &str) -> Option<VarValue> {
        let s = |v: &str| Some(VarValue::String(v.to_owned()));
        match name {
            "count" => Some(VarValue::List(vec!["one".into(), "two".into(), "three".into()])),
            "dom" => Some(VarValue::List(vec!["example".into(), "com".into()])),
            "dub" => s("me/too"),
            "hello" => s("Hello World!"),
            "half" => s("50%"),
            "var" => s("value"),
            "who" => s("fred"),
            "base" => s("http://example.com/home/"),
            "path" => s("/foo/bar"),
            "list" => Some(VarValue::List(vec!["red".into(), "green".into(), "blue".into()])),
            "keys" => Some(VarValue::Map(vec![
                ("semi".into(), ";".into()),
                ("dot".into(), ".".into()),
                ("comma".into(), ",".into()),
            ])),
            "v" => s("6"),
            "x" => s("1024"),
            "y" => s("768"),
            "empty" => s(""),
            "empty_keys" => Some(VarValue::Map(vec![])),
            _ => None,
        }
    }

    #[test]
    fn rfc6570_expansion_examples() {
        let cases = [
            // Level 1
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            // Level 2
            ("{+var}", "value"),
            ("{+hello}", "Hello%20World!"),
            ("{+path}/here", "/foo/bar/here"),
            ("here?ref={+path}", "here?ref=/foo/bar"),
            ("X{#var}", "X#value"),
            ("X{#hello}", "X#Hello%20World!"),
            // Level 3
            ("map?{x,y}", "map?1024,768"),
            ("{x,hello,y}", "1024,Hello%20World%21,768"),
            ("{+x,hello,y}", "1024,Hello%20World!,768"),
            ("{+path,x}/here", "/foo/bar,1024/here"),
            ("{#x,hello,y}", "#1024,Hello%20World!,768"),
            ("{#path,x}/here", "#/foo/bar,1024/here"),
            ("X{.var}", "X.value"),
            ("X{.x,y}", "X.1024.768"),
            ("{/var}", "/value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{;x,y}", ";x=1024;y=768"),
            ("{;x,y,empty}", ";x=1024;y=768;empty"),
            ("{?x,y}", "?x=1024&y=768"),
            ("{?x,y,empty}", "?x=1024&y=768&empty="),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{&x,y,empty}", "&x=1024&y=768&empty="),
            // Level 4
            ("{var:3}", "val"),
            ("{var:30}", "value"),
            ("{list}", "red,green,blue"),
            ("{list*}", "red,green,blue"),
            ("{keys}", "semi,%3B,dot,.,comma,%2C"),
            ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
            ("{+path:6}/here", "/foo/b/here"),
            ("{+list}", "red,green,blue"),
            ("{+keys}", "semi,;,dot,.,comma,,"),
            ("{+keys*}", "semi=;,dot=.,comma=,"),
            ("{#path:6}/here", "#/foo/b/here"),
            ("{#keys*}", "#semi=;,dot=.,comma=,"),
            ("X{.var:3}", "X.val"),
            ("X{.list}", "X.red,green,blue"),
            ("X{.list*}", "X.red.green.blue"),
            ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
            ("{/var:1,var}", "/v/value"),
            ("{/list}", "/red,green,blue"),
            ("{/list*}", "/red/green/blue"),
            ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
            ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
            ("{;hello:5}", ";hello=Hello"),
            ("{;list}", ";list=red,green,blue"),
            ("{;list*}", ";list=red;list=green;list=blue"),
            ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
            ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
            ("{?var:3}", "?var=val"),
            ("{?list}", "?list=red,green,blue"),
            ("{?list*}", "?list=red&list=green&list=blue"),
            ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
            ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
            ("{&var:3}", "&var=val"),
            ("{&list*}", "&list=red&list=green&list=blue"),
            ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
            // Section 3.2 extras
            ("{count}", "one,two,three"),
            ("{/count*}", "/one/two/three"),
            ("{;count*}", ";count=one;count=two;count=three"),
            ("{dom*}", "example,com"),
            ("{half}", "50%25"),
            ("{+half}", "50%25"),
            ("{+dub}", "me/too"),
            ("{?who,dub}", "?who=fred&dub=me%2Ftoo"),
            ("{+base}index", "http://example.com/home/index"),
            ("{undef}", ""),
            ("{?undef}", ""),
            ("{?empty_keys*}", ""),
            ("{x,undef,y}", "1024,768"),
            ("O{empty}X", "OX"),
            ("{;v,empty,who}", ";v=6;empty;who=fred"),
            ("{?v,empty,who}", "?v=6&empty=&who=fred"),
        ];
        for (template, expected) in cases {
            assert_eq!(t(template).expand_values(rfc_vars), expected, "{template}");
        }
    }

    #[test]
    fn expand_string_apis() {
        let tpl = t("users://{id}/profile");
        assert_eq!(tpl.expand(|n| (n == "id").then(|| "a/b c".to_owned())), "users://a%2Fb%20c/profile");
        let mut map = std::collections::HashMap::new();
        map.insert("id".to_owned(), "42".to_owned());
        assert_eq!(tpl.expand_from(&map), "users://42/profile");
        assert_eq!(tpl.expand_from([("id", "7")]), "users://7/profile");
        // Pre-encoded triplets survive reserved expansion only.
        assert_eq!(t("{+p}").expand_from([("p", "a%2Fb")]), "a%2Fb");
        assert_eq!(t("{p}").expand_from([("p", "a%2Fb")]), "a%252Fb");
        // Prefix counts characters, not bytes.
        assert_eq!(t("{p:2}").expand_from([("p", "héllo")]), "h%C3%A9");
        // Literals with non-ASCII are percent-encoded.
        assert_eq!(t("x/é/{p}").expand_from([("p", "1")]), "x/%C3%A9/1");
    }

    #[test]
    fn mcp_examples_both_ways() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            ("file:///{path}", &[("path", "notes.txt")], "file:///notes.txt"),
            ("users://{id}/profile", &[("id", "123")], "users://123/profile"),
            ("test://template/{id}/data", &[("id", "abc")], "test://template/abc/data"),
            (
                "repo://{owner}/{repo}/issues{?state,page}",
                &[("owner", "o"), ("repo", "r"), ("state", "open"), ("page", "2")],
                "repo://o/r/issues?state=open&page=2",
            ),
            ("repo://{owner}/{repo}/issues{?state,page}", &[("owner", "o"), ("repo", "r")], "repo://o/r/issues"),
            ("file:///{+path}", &[("path", "home/user/a b.txt")], "file:///home/user/a%20b.txt"),
        ];
        for (template, vars, uri) in cases {
            let tpl = t(template);
            assert_eq!(tpl.expand_from(vars.iter().copied()), *uri, "{template}");
            assert_eq!(m(template, uri), pairs(vars), "{template} ~ {uri}");
        }
    }

    #[test]
    fn query_params_any_order_and_optional() {
        let tpl = "repo://{owner}/{repo}/issues{?state,page}";
        assert_eq!(
            m(tpl, "repo://o/r/issues?page=3&state=closed"),
            pairs(&[("owner", "o"), ("repo", "r"), ("state", "closed"), ("page", "3")])
        );
        assert_eq!(m(tpl, "repo://o/r/issues?page=3"), pairs(&[("owner", "o"), ("repo", "r"), ("page", "3")]));
        assert_eq!(m(tpl, "repo://o/r/issues?state="), pairs(&[("owner", "o"), ("repo", "r"), ("state", "")]));
        // Unknown or repeated parameters do not match.
        assert_eq!(m(tpl, "repo://o/r/issues?sort=asc"), None);
        assert_eq!(m(tpl, "repo://o/r/issues?page=1&page=2"), None);
        // `{&...}` following `{?...}` joins the same parameter set.
        assert_eq!(m("s{?q}{&lang}", "s?lang=en&q=x"), pairs(&[("q", "x"), ("lang", "en")]));
        assert_eq!(m("s?fixed=1{&x}", "s?fixed=1&x=2"), pairs(&[("x", "2")]));
        // Exploded named variables collect repeats.
        assert_eq!(m("s{?tag*}", "s?tag=a&tag=b"), pairs(&[("tag", "a,b")]));
    }

    #[test]
    fn reserved_and_fragment() {
        assert_eq!(m("file:///{+path}", "file:///a/b/../c.txt"), pairs(&[("path", "a/b/../c.txt")]));
        // The shortest extent wins, leaving the query to `q`.
        assert_eq!(m("file:///{+path}{?q}", "file:///a/b?q=1"), pairs(&[("path", "a/b"), ("q", "1")]));
        assert_eq!(m("file:///{+path}", "file:///a/b?q=1"), pairs(&[("path", "a/b?q=1")]));
        assert_eq!(m("doc://{+path}{#section}", "doc://x/y#intro"), pairs(&[("path", "x/y"), ("section", "intro")]));
        assert_eq!(m("doc://{+path}{#section}", "doc://x/y"), pairs(&[("path", "x/y")]));
        assert_eq!(m("{+dir}/{file}", "a/b/c.txt"), pairs(&[("dir", "a/b"), ("file", "c.txt")]));
        assert_eq!(m("file:///{+path}", "file:///"), None, "empty value");
    }

    #[test]
    fn other_operators() {
        assert_eq!(m("api{/ver,res}", "api/v1/users"), pairs(&[("ver", "v1"), ("res", "users")]));
        assert_eq!(m("api{/ver,res}", "api/v1"), pairs(&[("ver", "v1")]));
        assert_eq!(m("api{/ver,res}", "api"), pairs(&[]));
        assert_eq!(m("api{/ver,res}", "api/v1/users/extra"), None);
        assert_eq!(m("p{/segs*}", "p/a/b%2Fc/d"), pairs(&[("segs", "a/b/c/d")]));
        assert_eq!(m("file{.ext1,ext2}", "file.tar.gz"), pairs(&[("ext1", "tar"), ("ext2", "gz")]));
        assert_eq!(m("m{;x,y}", "m;y=2;x=1"), pairs(&[("x", "1"), ("y", "2")]));
        assert_eq!(m("m{;x,y}", "m;x"), pairs(&[("x", "")]));
        assert_eq!(m("m{;x,y}", "m;z=1"), None);
        assert_eq!(m("{x,y}", "1024,768"), pairs(&[("x", "1024"), ("y", "768")]));
        assert_eq!(m("{x}", "a,b"), pairs(&[("x", "a,b")]));
        assert_eq!(m("{v:3}", "abc"), pairs(&[("v", "abc")]));
        assert_eq!(m("{v:3}", "abcd"), None);
        assert_eq!(m("{a}/{a}", "x/x"), pairs(&[("a", "x")]));
        assert_eq!(m("{a}/{a}", "x/y"), None);
    }

    #[test]
    fn non_matches() {
        assert_eq!(m("users://{id}/profile", "user://123/profile"), None);
        assert_eq!(m("users://{id}/profile", "users://123/profile/x"), None);
        assert_eq!(m("users://{id}/profile", "users://1/2/profile"), None);
        assert_eq!(m("users://{id}/profile", "users://123"), None);
        assert_eq!(m("users://{id}/profile", "users:///profile"), None);
        assert_eq!(m("users://{id}/profile", "users://123/profil"), None);
        assert_eq!(m("test://template/{id}/data", "test://template/x/date"), None);
        assert_eq!(m("file:///{path}", "file:///a/b"), None);
        assert_eq!(m("file:///{path}", "file:///a?b"), None);
        assert_eq!(m("file:///{path}", "http:///a"), None);
        assert_eq!(m("static://x", "static://x"), pairs(&[]));
        assert_eq!(m("static://x", "static://y"), None);
        assert_eq!(m("static://x", ""), None);
        assert_eq!(m("{x}", ""), None);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(m("users://{id}/profile", "users://a%20b%2Fc/profile"), pairs(&[("id", "a b/c")]));
        assert_eq!(m("users://{id}/profile", "users://%C3%A9t%C3%A9/profile"), pairs(&[("id", "été")]));
        assert_eq!(m("s{?q}", "s?q=a%26b%3Dc+d"), pairs(&[("q", "a&b=c+d")]));
        // Invalid escapes and invalid UTF-8 do not match.
        assert_eq!(m("users://{id}/profile", "users://%zz/profile"), None);
        assert_eq!(m("users://{id}/profile", "users://%4/profile"), None);
        assert_eq!(m("users://{id}/profile", "users://%FF/profile"), None);
        // A literal with non-ASCII matches its encoded form.
        assert_eq!(m("x/é/{p}", "x/%C3%A9/1"), pairs(&[("p", "1")]));
    }

    #[test]
    fn expand_then_match_round_trips() {
        let values = ["plain", "a b", "ü/ß?&=#", "100%", "a,b", ""];
        for template in ["users://{id}/profile", "file:///{+path}", "x{?q,r}", "x{/a}", "x{;a}", "x{#a}"] {
            let tpl = t(template);
            for v in values {
                if v.is_empty() && template.contains("{id}") {
                    continue; // expands to an empty segment, which never matches
                }
                if v.is_empty() && template.contains("{+") {
                    continue; // likewise
                }
                let uri = tpl.expand_from([("id", v), ("path", v), ("q", v), ("a", v)]);
                let got = tpl.matches(&uri).expect("expansion matches its template");
                let name = tpl.variables().next().expect("one variable");
                assert_eq!(got.get(name), Some(v), "{template} with {v:?} -> {uri}");
            }
        }
    }

    #[test]
    fn adversarial_input_terminates() {
        let many_slashes = "/".repeat(100_000);
        let many_a = "a".repeat(100_000);
        let cases = [
            ("{+a}/{+b}/{+c}/{+d}/end", format!("{many_slashes}x")),
            ("{+a}{+b}{+c}{+d}!", many_a.clone()),
            ("{a}{b}{c}{d}{e}{f}!", many_a.clone()),
            ("x{?a,b,c}", format!("x?{}", "a=1&".repeat(25_000))),
            ("{/a*}{/b*}z", many_slashes.clone()),
        ];
        for (template, uri) in &cases {
            assert!(uri.len() <= MAX_MATCH_LEN);
            assert_eq!(t(template).matches(uri), None, "{template}");
        }
        // A successful match on long input.
        let long = format!("file:///{}", "ab/".repeat(30_000));
        let got = t("file:///{+path}").matches(&long).expect("matches");
        assert_eq!(got.get("path").map(str::len), Some(90_000));
        // Over the limit: refused outright.
        let huge = format!("file:///{}", "a".repeat(MAX_MATCH_LEN));
        assert_eq!(t("file:///{+path}").matches(&huge), None);
    }

    #[test]
    fn several_exploded_variables() {
        assert_eq!(m("{/a*,b*}", "/1/2/3"), pairs(&[("a", "1/2"), ("b", "3")]));
        assert_eq!(m("{/a*,b*}", "/1"), pairs(&[("a", "1")]));
        assert_eq!(m("{?a*,b*}", "?b=1&a=2&b=3"), pairs(&[("a", "2"), ("b", "1,3")]));
        assert_eq!(m("{.a,b*,c}", ".1.2.3.4"), pairs(&[("a", "1"), ("b", "2.3"), ("c", "4")]));
    }

    #[test]
    fn random_uris_never_panic() {
        use rand::RngCore as _;
        let templates: Vec<UriTemplate> = [
            "{x}",
            "{+x}",
            "{#x,y}",
            "a{.x,y*}",
            "{/x*,y,z*}",
            "{;x,y*}",
            "{?x,y*}{&z}",
            "u://{a}/{+b}{?c}{#d}",
            "{x:2}{y:1}",
            "{a}{a}",
        ]
        .iter()
        .map(|s| t(s))
        .collect();
        let alphabet = b"ab/?#&=;.,%2F*+:%zz\xc3\xa9";
        let mut rng = rand::rng();
        for _ in 0..3000 {
            let len = (rng.next_u32() % 24) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| alphabet[rng.next_u32() as usize % alphabet.len()]).collect();
            let uri = String::from_utf8_lossy(&bytes);
            for tpl in &templates {
                if let Some(found) = tpl.matches(&uri) {
                    assert!(found.iter().all(|(k, _)| tpl.variables().any(|n| n == k)));
                }
            }
        }
    }

    #[test]
    fn parse_errors() {
        use UriTemplateErrorKind::*;
        let cases = [
            ("users://{id/profile", 8, UnclosedBrace),
            ("a{b{c}}", 1, UnclosedBrace),
            ("a}", 1, UnmatchedCloseBrace),
            ("x{}", 1, EmptyExpression),
            ("x{+}", 1, EmptyExpression),
            ("{=x}", 1, ReservedOperator),
            ("{|x}", 1, ReservedOperator),
            ("{a-b}", 2, InvalidVariableName),
            ("{a,}", 3, InvalidVariableName),
            ("{,a}", 1, ReservedOperator),
            ("{.a.}", 3, InvalidVariableName),
            ("{a..b}", 3, InvalidVariableName),
            ("{ a}", 1, InvalidVariableName),
            ("{a%2}", 2, InvalidVariableName),
            ("{a:0}", 3, InvalidPrefix),
            ("{a:}", 3, InvalidPrefix),
            ("{a:10000}", 3, InvalidPrefix),
            ("{a*x}", 3, UnexpectedAfterModifier),
            ("{a:3*}", 4, UnexpectedAfterModifier),
            ("a b", 1, InvalidLiteral),
            ("a|b", 1, InvalidLiteral),
            ("a%2", 1, InvalidPercentEncoding),
            ("a%zz", 1, InvalidPercentEncoding),
        ];
        for (template, position, kind) in cases {
            let e = UriTemplate::parse(template).expect_err(template);
            assert_eq!((e.position(), e.kind()), (position, kind), "{template}: {e}");
        }
        let e = UriTemplate::parse("users://{id/profile").expect_err("unclosed");
        assert_eq!(e.to_string(), "invalid URI template at byte 8: unclosed '{'");
    }

    #[test]
    fn parse_accepts_full_syntax() {
        let tpl = t("x{+a,b:3}{#c*}{.d}{/e,f*}{;g}{?h,i.j}{&k_1,%41}y");
        assert_eq!(tpl.as_str(), "x{+a,b:3}{#c*}{.d}{/e,f*}{;g}{?h,i.j}{&k_1,%41}y");
        assert_eq!(tpl.variables().collect::<Vec<_>>(), ["a", "b", "c", "d", "e", "f", "g", "h", "i.j", "k_1", "%41"]);
        assert!(!tpl.is_literal());
        assert!(t("static://x").is_literal());
        assert_eq!(t("{a}{a}").variables().count(), 1);
        assert_eq!("a{b}".parse::<UriTemplate>().map(|t| t.to_string()), Ok("a{b}".to_owned()));
    }

    #[test]
    fn uri_match_accessors() {
        let got = t("{a}/{b}").matches("1/2").expect("matches");
        assert_eq!(got.len(), 2);
        assert!(!got.is_empty());
        assert_eq!(got.get("c"), None);
        assert_eq!(got.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
        assert_eq!((&got).into_iter().count(), 2);
        let owned: Vec<(String, String)> = got.into_iter().collect();
        assert_eq!(owned.len(), 2);
    }
}
