//! A compiled rule and how it matches a [`Request`].

use globset::{GlobBuilder, GlobMatcher};
use portico::schema::ToolAnnotations;
use serde_json::Value;

use super::args::ArgPredicate;
use super::raw::RawRule;
use super::{Action, Decision, Method, Request, Source};
use crate::config::ConfigError;
use crate::policy::rate::{Rate, RateBy, RateLimit};

/// A glob, compiled, with its text for explanations.
#[derive(Debug, Clone)]
pub(super) struct Pattern {
    pub(super) text: String,
    matcher: GlobMatcher,
}

impl Pattern {
    /// A glob on names: `*` matches any characters, `/` included.
    pub(super) fn name(text: &str, field: &str) -> Result<Pattern, ConfigError> {
        Pattern::build(text, false, field)
    }

    /// A glob on paths and other `/`-separated values: `*` stays within a segment.
    pub(super) fn path(text: &str, field: &str) -> Result<Pattern, ConfigError> {
        Pattern::build(text, true, field)
    }

    fn build(text: &str, separator: bool, field: &str) -> Result<Pattern, ConfigError> {
        let glob = GlobBuilder::new(text)
            .literal_separator(separator)
            .build()
            .map_err(|e| ConfigError::new(format!("not a glob: {}", e.kind())).field(field.to_owned()))?;
        Ok(Pattern { text: text.to_owned(), matcher: glob.compile_matcher() })
    }

    pub(super) fn is_match(&self, s: &str) -> bool {
        self.matcher.is_match(s)
    }
}

/// A tool annotation a rule can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hint {
    ReadOnly,
    Destructive,
    Idempotent,
    OpenWorld,
    Title,
}

impl Hint {
    const ALL: [Hint; 5] = [Hint::ReadOnly, Hint::Destructive, Hint::Idempotent, Hint::OpenWorld, Hint::Title];

    fn key(self) -> &'static str {
        match self {
            Hint::ReadOnly => "readOnlyHint",
            Hint::Destructive => "destructiveHint",
            Hint::Idempotent => "idempotentHint",
            Hint::OpenWorld => "openWorldHint",
            Hint::Title => "title",
        }
    }

    /// The tool's value of the hint, the MCP default when not declared, and whether it was.
    fn of(self, a: Option<&ToolAnnotations>) -> (Value, bool) {
        let flag = |v: Option<bool>, default: bool| (Value::Bool(v.unwrap_or(default)), v.is_some());
        match self {
            Hint::ReadOnly => flag(a.and_then(|a| a.read_only_hint), false),
            Hint::Destructive => flag(a.and_then(|a| a.destructive_hint), true),
            Hint::Idempotent => flag(a.and_then(|a| a.idempotent_hint), false),
            Hint::OpenWorld => flag(a.and_then(|a| a.open_world_hint), true),
            Hint::Title => match a.and_then(|a| a.title.as_deref()) {
                Some(t) => (Value::String(t.to_owned()), true),
                None => (Value::Null, false),
            },
        }
    }
}

/// One `[[policy.rules]]` entry, compiled.
#[derive(Debug, Clone)]
pub(super) struct Rule {
    pub(super) index: usize,
    pub(super) name: Option<String>,
    server: Option<Pattern>,
    tool: Option<Pattern>,
    methods: Option<Vec<Method>>,
    annotations: Vec<(Hint, Value)>,
    pub(super) args: Vec<ArgPredicate>,
    pub(super) principal: Option<Pattern>,
    pub(super) action: Action,
    reason: Option<String>,
    pub(super) hide: bool,
    review_result: bool,
    rate: Option<RateLimit>,
}

impl Rule {
    pub(super) fn compile(index: usize, r: &RawRule) -> Result<Rule, ConfigError> {
        let f = |key: &str| format!("policy.rules[{index}].{key}");
        let action = match r.decision.as_deref() {
            None => return Err(ConfigError::new("missing: allow, ask or deny").field(f("decision"))),
            Some(d) => Action::from_config(Some(d), Action::Ask, &f("decision"))?,
        };
        if let Some(name) = &r.name
            && name.trim().is_empty()
        {
            return Err(ConfigError::new("is empty").field(f("name")));
        }
        let server = r.server.as_deref().map(|g| Pattern::name(g, &f("server"))).transpose()?;
        let tool = r.tool.as_deref().map(|g| Pattern::name(g, &f("tool"))).transpose()?;
        let principal = r.principal.as_deref().map(|g| Pattern::name(g, &f("principal"))).transpose()?;
        let methods = match &r.method {
            None => None,
            Some(list) => {
                if list.values().is_empty() {
                    return Err(ConfigError::new("is an empty list; leave it out for every method").field(f("method")));
                }
                let mut methods = Vec::new();
                for (i, m) in list.values().iter().enumerate() {
                    let field = match list {
                        super::raw::OneOrMany::One(_) => f("method"),
                        super::raw::OneOrMany::Many(_) => format!("{}[{i}]", f("method")),
                    };
                    let names: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
                    let m = Method::parse(m)
                        .ok_or_else(|| ConfigError::new(format!("must be one of {}", names.join(", "))).field(field))?;
                    methods.push(m);
                }
                Some(methods)
            }
        };
        let mut annotations = Vec::new();
        for (key, value) in r.annotations.iter().flatten() {
            let field = format!("{}.{key}", f("annotations"));
            let Some(hint) = Hint::ALL.into_iter().find(|h| h.key() == key) else {
                let keys: Vec<&str> = Hint::ALL.iter().map(|h| h.key()).collect();
                return Err(ConfigError::new(format!("not one of {}", keys.join(", "))).field(field));
            };
            let ok = if hint == Hint::Title { value.is_string() } else { value.is_boolean() };
            if !ok {
                let kind = if hint == Hint::Title { "a string" } else { "true or false" };
                return Err(ConfigError::new(format!("must be {kind}")).field(field));
            }
            annotations.push((hint, value.clone()));
        }
        // Explanations list the hints in one order, whatever the map's.
        annotations.sort_by_key(|(hint, _)| Hint::ALL.iter().position(|h| h == hint));
        let args = r
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| ArgPredicate::compile(a, &format!("{}[{i}]", f("args"))))
            .collect::<Result<Vec<_>, _>>()?;
        let hide = r.hide.unwrap_or(false);
        if hide && action != Action::Deny {
            return Err(ConfigError::new("only a `deny` rule can hide a tool").field(f("hide")));
        }
        let review_result = r.review_result.unwrap_or(false);
        if review_result && action == Action::Deny {
            return Err(ConfigError::new("a `deny` rule has no result to review").field(f("review_result")));
        }
        let rate = match (&r.rate, &r.rate_by) {
            (None, None) => None,
            (None, Some(_)) => return Err(ConfigError::new("needs `rate`").field(f("rate_by"))),
            (Some(rate), by) => {
                if action == Action::Deny {
                    return Err(ConfigError::new("a `deny` rule lets nothing through to count").field(f("rate")));
                }
                let rate = Rate::parse(rate).map_err(|m| ConfigError::new(m).field(f("rate")))?;
                let by = match by.as_deref() {
                    None => RateBy::Principal,
                    Some(b) => RateBy::parse(b).ok_or_else(|| {
                        ConfigError::new("must be one of principal, server, tool").field(f("rate_by"))
                    })?,
                };
                let key = match &r.name {
                    Some(name) => format!("rule:{name}"),
                    None => format!("rules[{index}]"),
                };
                Some(RateLimit { key, rate, by })
            }
        };
        Ok(Rule {
            index,
            name: r.name.clone(),
            server,
            tool,
            methods,
            annotations,
            args,
            principal,
            action,
            reason: r.reason.clone(),
            hide,
            review_result,
            rate,
        })
    }

    pub(super) fn decision(&self) -> Decision {
        Decision {
            action: self.action,
            source: Source::Rule { index: self.index, name: self.name.clone() },
            reason: self.reason.clone(),
            review_result: self.review_result,
            hide: self.hide,
            rate: self.rate.clone(),
            always: None,
        }
    }

    pub(super) fn matches(&self, req: &Request<'_>) -> bool {
        self.check(req, None)
    }

    /// Whether every condition holds. With `why`, every condition is checked and each that
    /// fails is described there; without, the first failure ends the check.
    pub(super) fn check(&self, req: &Request<'_>, mut why: Option<&mut Vec<String>>) -> bool {
        let mut ok = self.check_static(req, why.as_deref_mut());
        if !ok && why.is_none() {
            return false;
        }
        if let Some(p) = &self.principal
            && !p.is_match(req.principal)
        {
            ok = false;
            if !miss(&mut why, || format!("principal `{}` does not match `{}`", req.principal, p.text)) {
                return false;
            }
        }
        for a in &self.args {
            if !a.check(req.arguments, why.as_deref_mut()) {
                ok = false;
                if why.is_none() {
                    return false;
                }
            }
        }
        ok
    }

    /// The conditions that do not depend on the call's arguments or principal: method,
    /// server, tool and annotations.
    pub(super) fn check_static(&self, req: &Request<'_>, mut why: Option<&mut Vec<String>>) -> bool {
        let mut ok = true;
        if let Some(methods) = &self.methods
            && !methods.contains(&req.method)
        {
            ok = false;
            let text = || {
                let list: Vec<String> = methods.iter().map(|m| format!("`{m}`")).collect();
                let want = if list.len() == 1 { list.join("") } else { format!("one of {}", list.join(", ")) };
                format!("method `{}` is not {want}", req.method)
            };
            if !miss(&mut why, text) {
                return false;
            }
        }
        if let Some(p) = &self.server
            && !p.is_match(req.server)
        {
            ok = false;
            if !miss(&mut why, || format!("server `{}` does not match `{}`", req.server, p.text)) {
                return false;
            }
        }
        if let Some(p) = &self.tool {
            let target = req.method.target();
            if !target.is_some_and(|_| p.is_match(req.name) || p.is_match(req.exposed)) {
                ok = false;
                let text = || match target {
                    None => format!("{} has no tool, and the rule names one (`{}`)", req.method, p.text),
                    Some(target) if req.exposed == req.name => {
                        format!("{target} `{}` does not match `{}`", req.name, p.text)
                    }
                    Some(target) => {
                        format!("{target} `{}` (exposed as `{}`) does not match `{}`", req.name, req.exposed, p.text)
                    }
                };
                if !miss(&mut why, text) {
                    return false;
                }
            }
        }
        if !self.annotations.is_empty() && req.method != Method::CallTool {
            ok = false;
            if !miss(&mut why, || format!("the rule matches annotations of tools, and this is {}", req.method)) {
                return false;
            }
        } else {
            for (hint, want) in &self.annotations {
                let (have, declared) = hint.of(req.annotations);
                if have == *want {
                    continue;
                }
                ok = false;
                let text = || match (declared, hint) {
                    (true, _) => format!("annotation `{}` is {have}, not {want}", hint.key()),
                    (false, Hint::Title) => format!("annotation `title` is not declared, not {want}"),
                    (false, _) => format!("annotation `{}` is not declared (so {have}), not {want}", hint.key()),
                };
                if !miss(&mut why, text) {
                    return false;
                }
            }
        }
        ok
    }
}

/// Records a failed condition in `why`; `false` when no explanation is wanted and the check
/// can stop.
pub(super) fn miss(why: &mut Option<&mut Vec<String>>, text: impl FnOnce() -> String) -> bool {
    match why {
        Some(why) => {
            why.push(text());
            true
        }
        None => false,
    }
}
