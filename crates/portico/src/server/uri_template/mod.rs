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
        let parts = parse::parse_parts(template)?;
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

pub(super) fn is_hex_at(bytes: &[u8], i: usize) -> bool {
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

mod matcher;
mod parse;
use matcher::*;

#[cfg(test)]
mod tests;
