//! Policy rules (`portico_host::policy`): rules built from the fuzzer's bytes go through the
//! `[policy]` parser and compiler, and every decision equals the one a naive matcher written
//! here reaches: rules in order, the first whose every condition holds decides, else the
//! defaults. The naive matcher has its own glob matcher (literals, `*`, `?`) and JSON pointer
//! lookup; it trusts the `regex` crate (linear time: finite automata, no backtracking) for
//! what a regular expression matches.

use portico_host::policy::raw::RawPolicy;
use portico_host::policy::{Action, Method, Policy, Request, Source};
use portico_schema::ToolAnnotations;
use serde_json::{Map, Value, json};

const NAME_CHARS: &[char] = &['a', 'b', '_', '/', '.', '*', '?'];
const VALUE_CHARS: &[char] = &['a', 'b', '/', '.', ' ', '1'];
const REGEX_ATOMS: &[&str] = &["a", "b", "^", "$", ".", "a*", "(a|b)", "[ab]+", r"\d", "(", "x{2,3}", "(a*)*", "/"];
const POINTERS: &[&str] = &["", "/a", "/b", "/a/b", "/a/0", "/a~1b", "/n"];

/// A glob of the generated alphabet: literals, `*` (never two in a row) and `?`.
fn glob(b: &mut crate::Bytes<'_>) -> String {
    let mut g = b.string(NAME_CHARS, 5);
    while g.contains("**") {
        g = g.replace("**", "*");
    }
    g
}

fn value(b: &mut crate::Bytes<'_>, depth: u32) -> Value {
    match b.below(if depth > 2 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(b.bool()),
        2 => json!(b.below(4)),
        3 => json!(b.below(4) as f64 + [0.0, 0.5][b.below(2)]),
        4 => Value::String(b.string(VALUE_CHARS, 6)),
        5 => Value::Array((0..b.below(3)).map(|_| value(b, depth + 1)).collect()),
        _ => {
            let mut m = Map::new();
            for _ in 0..b.below(3) {
                m.insert(["a", "b", "a/b", "0", "n"][b.below(5)].to_owned(), value(b, depth + 1));
            }
            Value::Object(m)
        }
    }
}

fn arg(b: &mut crate::Bytes<'_>) -> Value {
    let mut a = Map::new();
    a.insert("pointer".into(), json!(POINTERS[b.below(POINTERS.len())]));
    for _ in 0..1 + b.below(2) {
        match b.below(6) {
            0 => a.insert("equals".into(), value(b, 1)),
            1 => a.insert("glob".into(), json!(glob(b))),
            2 => {
                let r: String = (0..b.below(4)).map(|_| REGEX_ATOMS[b.below(REGEX_ATOMS.len())]).collect();
                a.insert("regex".into(), json!(r))
            }
            3 => a.insert(["lt", "le", "gt", "ge"][b.below(4)].into(), json!(b.below(4) as f64 - 0.5)),
            _ => a.insert("exists".into(), json!(b.bool())),
        };
    }
    Value::Object(a)
}

fn rule(b: &mut crate::Bytes<'_>) -> Value {
    let mut r = Map::new();
    if b.bool() {
        r.insert("server".into(), json!(glob(b)));
    }
    if b.bool() {
        r.insert("tool".into(), json!(glob(b)));
    }
    if b.bool() {
        r.insert("principal".into(), json!(glob(b)));
    }
    if b.bool() {
        let ms: Vec<&str> = (0..1 + b.below(2)).map(|_| Method::ALL[b.below(5)].as_str()).collect();
        r.insert("method".into(), if ms.len() == 1 { json!(ms[0]) } else { json!(ms) });
    }
    if b.bool() {
        let mut a = Map::new();
        for _ in 0..1 + b.below(2) {
            match b.below(5) {
                4 => a.insert("title".into(), json!(b.string(VALUE_CHARS, 2))),
                i => a.insert(
                    ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"][i].into(),
                    json!(b.bool()),
                ),
            };
        }
        r.insert("annotations".into(), Value::Object(a));
    }
    let args: Vec<Value> = (0..b.below(3)).map(|_| arg(b)).collect();
    if !args.is_empty() {
        r.insert("args".into(), Value::Array(args));
    }
    r.insert("decision".into(), json!(["allow", "ask", "deny"][b.below(3)]));
    Value::Object(r)
}

/// Naive glob: `*` any run of characters (within one `/` segment when `path`), `?` one.
fn glob_match(p: &[char], s: &[char], path: bool) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some(('*', rest)) => {
            (0..=s.len()).take_while(|&i| i == 0 || !(path && s[i - 1] == '/')).any(|i| glob_match(rest, &s[i..], path))
        }
        Some(('?', rest)) => s.first().is_some_and(|c| !(path && *c == '/')) && glob_match(rest, &s[1..], path),
        Some((c, rest)) => s.first() == Some(c) && glob_match(rest, &s[1..], path),
    }
}

fn glob_is(pattern: &str, s: &str, path: bool) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = s.chars().collect();
    glob_match(&p, &s, path)
}

/// Naive JSON pointer (RFC 6901).
fn lookup<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(v);
    }
    let mut cur = v;
    for token in pointer.strip_prefix('/')?.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        cur = match cur {
            Value::Object(m) => m.get(&token)?,
            Value::Array(items) => {
                if token.len() > 1 && token.starts_with('0') || token.starts_with('+') {
                    return None;
                }
                items.get(token.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

fn num_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let int = |n: &serde_json::Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
            match (int(x), int(y)) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| num_eq(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| num_eq(v, w)))
        }
        _ => a == b,
    }
}

fn arg_holds(a: &Map<String, Value>, args: &Value) -> bool {
    let pointer = a["pointer"].as_str().unwrap_or_default();
    let found = lookup(args, pointer);
    if a.get("exists") == Some(&json!(false)) {
        return found.is_none();
    }
    let Some(v) = found else { return false };
    a.iter().all(|(k, want)| match k.as_str() {
        // `equals = null` reads as no test (TOML has no null; JSON null is `None` here).
        "equals" => want.is_null() || num_eq(v, want),
        "glob" => v.as_str().is_some_and(|s| glob_is(want.as_str().unwrap_or_default(), s, true)),
        "regex" => v
            .as_str()
            .is_some_and(|s| regex::Regex::new(want.as_str().unwrap_or_default()).is_ok_and(|r| r.is_match(s))),
        "lt" => v.as_f64().zip(want.as_f64()).is_some_and(|(x, y)| x < y),
        "le" => v.as_f64().zip(want.as_f64()).is_some_and(|(x, y)| x <= y),
        "gt" => v.as_f64().zip(want.as_f64()).is_some_and(|(x, y)| x > y),
        "ge" => v.as_f64().zip(want.as_f64()).is_some_and(|(x, y)| x >= y),
        _ => true,
    })
}

struct Req<'a> {
    method: Method,
    server: &'a str,
    name: &'a str,
    exposed: &'a str,
    principal: &'a str,
    annotations: &'a Map<String, Value>,
    args: &'a Value,
}

fn rule_holds(r: &Map<String, Value>, q: &Req<'_>) -> bool {
    let s = |k: &str| r.get(k).and_then(Value::as_str);
    if let Some(m) = r.get("method") {
        let list: Vec<&str> = match m {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !list.contains(&q.method.as_str()) {
            return false;
        }
    }
    if s("server").is_some_and(|g| !glob_is(g, q.server, false)) {
        return false;
    }
    if let Some(g) = s("tool") {
        let has_target = matches!(q.method, Method::CallTool | Method::ReadResource | Method::GetPrompt);
        if !has_target || !(glob_is(g, q.name, false) || glob_is(g, q.exposed, false)) {
            return false;
        }
    }
    if let Some(Value::Object(want)) = r.get("annotations") {
        if q.method != Method::CallTool {
            return false;
        }
        for (k, w) in want {
            let have = match (k.as_str(), q.annotations.get(k)) {
                ("title", h) => h.cloned().unwrap_or(Value::Null),
                (_, Some(h)) => h.clone(),
                ("destructiveHint" | "openWorldHint", None) => Value::Bool(true),
                (_, None) => Value::Bool(false),
            };
            if have != *w {
                return false;
            }
        }
    }
    if s("principal").is_some_and(|g| !glob_is(g, q.principal, false)) {
        return false;
    }
    r.get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|a| a.as_object().is_some_and(|a| arg_holds(a, q.args)))
}

/// The check.
pub fn check(data: &[u8]) {
    let mut b = crate::Bytes(data);
    let rules: Vec<Value> = (0..b.below(5)).map(|_| rule(&mut b)).collect();
    let raw = json!({ "rules": rules });
    let Ok(parsed) = serde_json::from_value::<RawPolicy>(raw) else { panic!("generated rules do not parse") };
    let Ok(policy) = Policy::compile(&parsed) else { return };
    let names = ["a", "b", "a/b", "a.b", "ab", "", "b_a"];
    for _ in 0..4 {
        let method = Method::ALL[b.below(5)];
        let (server, name, exposed, principal) =
            (names[b.below(7)], names[b.below(7)], names[b.below(7)], ["local", "a", "ab"][b.below(3)]);
        let mut ann = Map::new();
        for key in ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] {
            if b.bool() {
                ann.insert(key.into(), json!(b.bool()));
            }
        }
        if b.bool() {
            ann.insert("title".into(), json!(b.string(VALUE_CHARS, 2)));
        }
        let annotations: ToolAnnotations = serde_json::from_value(Value::Object(ann.clone())).expect("annotations");
        let args = value(&mut b, 0);
        let req = Request::new(method, server, name)
            .exposed(exposed)
            .principal(principal)
            .annotations(Some(&annotations))
            .arguments(&args);
        let got = policy.decide(&req);
        let q = Req { method, server, name, exposed, principal, annotations: &ann, args: &args };
        let hit = rules.iter().position(|r| r.as_object().is_some_and(|r| rule_holds(r, &q)));
        match hit {
            Some(i) => {
                let want = Action::parse(rules[i]["decision"].as_str().unwrap_or_default());
                assert_eq!(
                    Some(got.action),
                    want,
                    "rule {i}: {}\nrequest {method} {server} {name} {exposed} {principal} {ann:?} {args}",
                    rules[i]
                );
                assert!(
                    matches!(got.source, Source::Rule { index, .. } if index == i),
                    "decided by {:?}, not rule {i}",
                    got.source
                );
            }
            None => {
                assert!(
                    !matches!(got.source, Source::Rule { .. }),
                    "rule {:?} matched; the naive matcher found none\nrules {rules:?}\nrequest {method} {server} {name} {exposed} {principal} {ann:?} {args}",
                    got.source
                );
                assert_eq!(got.action, policy.defaults().pick(&req).1);
            }
        }
    }
}
