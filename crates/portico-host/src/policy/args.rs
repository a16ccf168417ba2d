//! Argument predicates: tests on the value at a JSON pointer into a call's arguments.

use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::raw::RawArg;
use super::rule::{Pattern, miss};
use crate::config::ConfigError;

/// The most memory a compiled regular expression may take (the `regex` crate's limit), so a
/// rule cannot make the host allocate without bound.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// One test on a value.
#[derive(Debug, Clone)]
enum Test {
    Equals(Value),
    Glob(Pattern),
    Regex(Regex),
    Compare(Compare, f64),
}

#[derive(Debug, Clone, Copy)]
enum Compare {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Compare {
    fn holds(self, have: f64, bound: f64) -> bool {
        match self {
            Compare::Lt => have < bound,
            Compare::Le => have <= bound,
            Compare::Gt => have > bound,
            Compare::Ge => have >= bound,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Compare::Lt => "<",
            Compare::Le => "≤",
            Compare::Gt => ">",
            Compare::Ge => "≥",
        }
    }
}

/// `{ pointer = "/path", … }`, compiled: every test must pass.
#[derive(Debug, Clone)]
pub(super) struct ArgPredicate {
    pointer: String,
    exists: Option<bool>,
    tests: Vec<Test>,
}

impl ArgPredicate {
    /// Compiles `a`; `field` is `policy.rules[i].args[j]`.
    pub(super) fn compile(a: &RawArg, field: &str) -> Result<ArgPredicate, ConfigError> {
        let f = |key: &str| format!("{field}.{key}");
        let pointer = match &a.pointer {
            None => return Err(ConfigError::new("missing: a JSON pointer such as \"/path\"").field(f("pointer"))),
            Some(p) if !p.is_empty() && !p.starts_with('/') => {
                return Err(ConfigError::new("a JSON pointer starts with `/` (\"/path\")").field(f("pointer")));
            }
            Some(p) => p.clone(),
        };
        let mut tests = Vec::new();
        if let Some(v) = &a.equals {
            tests.push(Test::Equals(v.clone()));
        }
        if let Some(g) = &a.glob {
            tests.push(Test::Glob(Pattern::path(g, &f("glob"))?));
        }
        if let Some(r) = &a.regex {
            let regex = RegexBuilder::new(r)
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| ConfigError::new(regex_error(&e)).field(f("regex")))?;
            tests.push(Test::Regex(regex));
        }
        for (key, compare, bound) in
            [("lt", Compare::Lt, a.lt), ("le", Compare::Le, a.le), ("gt", Compare::Gt, a.gt), ("ge", Compare::Ge, a.ge)]
        {
            if let Some(bound) = bound {
                if !bound.is_finite() {
                    return Err(ConfigError::new("must be a finite number").field(f(key)));
                }
                tests.push(Test::Compare(compare, bound));
            }
        }
        match a.exists {
            None if tests.is_empty() => {
                return Err(ConfigError::new("needs a test: equals, glob, regex, lt, le, gt, ge or exists")
                    .field(field.to_owned()));
            }
            Some(false) if !tests.is_empty() => {
                return Err(ConfigError::new("`exists = false` cannot be combined with other tests").field(f("exists")));
            }
            _ => {}
        }
        Ok(ArgPredicate { pointer, exists: a.exists, tests })
    }

    /// Whether the arguments pass; with `why`, every failing test is described (without the
    /// argument's value, which may be a secret).
    pub(super) fn check(&self, args: &Value, mut why: Option<&mut Vec<String>>) -> bool {
        let p = &self.pointer;
        let value = args.pointer(p);
        match (value, self.exists) {
            (Some(_), Some(false)) => {
                miss(&mut why, || format!("argument `{p}` is given, and the rule wants it absent"));
                return false;
            }
            (None, Some(false)) => return true,
            (None, _) => {
                miss(&mut why, || format!("argument `{p}` is not given"));
                return false;
            }
            (Some(_), _) => {}
        }
        let Some(value) = value else { return false };
        let mut ok = true;
        for test in &self.tests {
            if !test.passes(value) {
                ok = false;
                if !miss(&mut why, || test.describe(p, value)) {
                    return false;
                }
            }
        }
        ok
    }
}

impl Test {
    fn passes(&self, value: &Value) -> bool {
        match self {
            Test::Equals(want) => json_eq(value, want),
            Test::Glob(g) => value.as_str().is_some_and(|s| g.is_match(s)),
            Test::Regex(r) => value.as_str().is_some_and(|s| r.is_match(s)),
            Test::Compare(c, bound) => value.as_f64().is_some_and(|n| c.holds(n, *bound)),
        }
    }

    /// Why `value` (at pointer `p`) fails, without quoting it.
    fn describe(&self, p: &str, value: &Value) -> String {
        match self {
            Test::Equals(want) => format!("argument `{p}` does not equal {want}"),
            Test::Glob(g) if value.is_string() => format!("argument `{p}` does not match glob `{}`", g.text),
            Test::Glob(g) => format!("argument `{p}` is not a string (for glob `{}`)", g.text),
            Test::Regex(r) if value.is_string() => format!("argument `{p}` does not match regex `{}`", r.as_str()),
            Test::Regex(r) => format!("argument `{p}` is not a string (for regex `{}`)", r.as_str()),
            Test::Compare(c, bound) if value.is_number() => format!("argument `{p}` is not {} {bound}", c.symbol()),
            Test::Compare(c, bound) => format!("argument `{p}` is not a number (for {} {bound})", c.symbol()),
        }
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// What is wrong with a regular expression, in one line.
fn regex_error(e: &regex::Error) -> String {
    match e {
        regex::Error::CompiledTooBig(_) => "the regular expression is too large".to_owned(),
        regex::Error::Syntax(text) => {
            let last = text.lines().rev().find(|l| l.starts_with("error:")).unwrap_or("invalid");
            format!(
                "not a regular expression ({}); look-around and back-references are not supported",
                last.trim_start_matches("error: ")
            )
        }
        _ => "not a regular expression".to_owned(),
    }
}
