//! Policy: every matcher and default, compile errors, explanations, hiding, rate limits, the
//! "always allow" store, and `decide` against a naive reference implementation.

use std::sync::Arc;
use std::time::Duration;

use portico::schema::ToolAnnotations;
use portico_host::policy::raw::{self, RawArg, RawPolicy, RawRule};
use portico_host::policy::{Action, AlwaysRule, AlwaysStore, DefaultKind, Method, Policy, RateLimits, Request, Source};
use serde_json::{Value, json};

fn policy(toml: &str) -> Policy {
    let (raw, warnings) = raw::from_toml(toml).expect("parses");
    assert!(warnings.is_empty(), "{warnings:?}");
    Policy::compile(&raw).expect("compiles")
}

/// An owned request, for tables.
#[derive(Debug, Clone)]
struct Req {
    method: Method,
    server: String,
    trusted: bool,
    name: String,
    exposed: String,
    annotations: Option<ToolAnnotations>,
    args: Value,
    principal: String,
}

impl Req {
    fn request(&self) -> Request<'_> {
        Request::new(self.method, &self.server, &self.name)
            .exposed(&self.exposed)
            .trusted(self.trusted)
            .annotations(self.annotations.as_ref())
            .arguments(&self.args)
            .principal(&self.principal)
    }
    fn method(mut self, m: Method) -> Self {
        self.method = m;
        self
    }
    fn server(mut self, s: &str) -> Self {
        self.server = s.to_owned();
        self
    }
    fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }
    fn ann(mut self, a: ToolAnnotations) -> Self {
        self.annotations = Some(a);
        self
    }
    fn args(mut self, v: Value) -> Self {
        self.args = v;
        self
    }
    fn by(mut self, p: &str) -> Self {
        self.principal = p.to_owned();
        self
    }
    fn exposed(mut self, e: &str) -> Self {
        self.exposed = e.to_owned();
        self
    }
}

/// A `tools/call` of `fs`'s `name`, exposed as `fs__name`, by `local`, with `{}`.
fn call(name: &str) -> Req {
    Req {
        method: Method::CallTool,
        server: "fs".into(),
        trusted: false,
        name: name.into(),
        exposed: format!("fs__{name}"),
        annotations: None,
        args: json!({}),
        principal: "local".into(),
    }
}

fn other(method: Method, name: &str) -> Req {
    Req { exposed: name.into(), ..call(name).method(method) }
}

fn ro(read_only: bool) -> ToolAnnotations {
    ToolAnnotations::new().with_read_only(read_only)
}

/// Each condition alone: a single `deny` rule over defaults that allow everything, so the
/// rule matched exactly when the decision is `deny`.
#[test]
fn every_matcher() {
    let file = json!({"path": "/tmp/a", "n": 5, "f": 2.5, "s": "5", "opts": {"depth": 2}, "files": ["/x"], "z": null, "o": {"a": [1, 2]}});
    let cases: Vec<(&str, Req, bool)> = vec![
        // server
        (r#"server = "fs""#, call("read"), true),
        (r#"server = "git*""#, call("read"), false),
        (r#"server = "f?""#, call("read"), true),
        // tool: upstream or exposed name
        (r#"tool = "read_file""#, call("read_file"), true),
        (r#"tool = "fs__read_file""#, call("read_file"), true),
        (r#"tool = "*__read*""#, call("read_file"), true),
        (r#"tool = "*write*""#, call("read_file"), false),
        (r#"tool = "{read,list}_*""#, call("list_dir"), true),
        (r#"tool = "fs__read_file""#, call("read_file").exposed("files__read_file"), false),
        (r#"tool = "file:///etc/*""#, other(Method::ReadResource, "file:///etc/ssh/key"), true),
        (r#"tool = "summarize""#, other(Method::GetPrompt, "summarize"), true),
        (r#"tool = "*""#, other(Method::CreateMessage, ""), false),
        (r#"tool = "*""#, other(Method::Elicit, ""), false),
        // method
        (r#"method = "tools/call""#, call("read"), true),
        (r#"method = "tools/call""#, other(Method::GetPrompt, "p"), false),
        (r#"method = ["prompts/get", "resources/read"]"#, other(Method::GetPrompt, "p"), true),
        (r#"method = ["prompts/get", "resources/read"]"#, call("read"), false),
        (r#"method = "sampling/createMessage""#, other(Method::CreateMessage, ""), true),
        (r#"method = "elicitation/create""#, other(Method::Elicit, ""), true),
        // annotations: as declared, else MCP's defaults
        ("annotations = { readOnlyHint = true }", call("read").ann(ro(true)), true),
        ("annotations = { readOnlyHint = true }", call("read").ann(ro(false)), false),
        ("annotations = { readOnlyHint = true }", call("read"), false),
        ("annotations = { readOnlyHint = false }", call("read"), true),
        ("annotations = { destructiveHint = true }", call("rm"), true),
        (
            "annotations = { destructiveHint = true }",
            call("rm").ann(ToolAnnotations::new().with_destructive(false)),
            false,
        ),
        ("annotations = { openWorldHint = true }", call("fetch").ann(ro(true)), true),
        ("annotations = { openWorldHint = false }", call("fetch"), false),
        ("annotations = { idempotentHint = false }", call("x"), true),
        (r#"annotations = { title = "Read" }"#, call("x").ann(ToolAnnotations::new().with_title("Read")), true),
        (r#"annotations = { title = "Read" }"#, call("x"), false),
        ("annotations = { readOnlyHint = true, destructiveHint = false }", call("x").ann(ro(true)), false),
        (
            "annotations = { readOnlyHint = true, destructiveHint = false }",
            call("x").ann(ro(true).with_destructive(false)),
            true,
        ),
        ("annotations = { readOnlyHint = false }", other(Method::GetPrompt, "p"), false),
        // args: equals
        (r#"args = [{ pointer = "/path", equals = "/tmp/a" }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/path", equals = "/tmp/b" }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/n", equals = 5.0 }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/s", equals = 5 }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/opts", equals = { depth = 2 } }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/o", equals = { a = [1, 2.0] } }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/o", equals = { a = [2, 1] } }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "", equals = {} }]"#, call("w"), true),
        // args: glob (`/` separates)
        (r#"args = [{ pointer = "/path", glob = "/tmp/*" }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/path", glob = "/tmp/*" }]"#, call("w").args(json!({"path": "/tmp/a/b"})), false),
        (r#"args = [{ pointer = "/path", glob = "/tmp/**" }]"#, call("w").args(json!({"path": "/tmp/a/b"})), true),
        (
            r#"args = [{ pointer = "/path", glob = "**/.ssh/**" }]"#,
            call("w").args(json!({"path": "/home/u/.ssh/id"})),
            true,
        ),
        (r#"args = [{ pointer = "/n", glob = "*" }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/files/0", glob = "/x" }]"#, call("w").args(file.clone()), true),
        // args: regex (a search; anchor for the whole value)
        (r#"args = [{ pointer = "/path", regex = "^/tmp/" }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/path", regex = "mp" }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/path", regex = "^mp" }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/path", regex = '\.env$' }]"#, call("w").args(json!({"path": "a/.env"})), true),
        (r#"args = [{ pointer = "/n", regex = "5" }]"#, call("w").args(file.clone()), false),
        // args: numbers
        (r#"args = [{ pointer = "/n", lt = 5 }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/n", le = 5 }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/n", gt = 4.5 }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/n", ge = 6 }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/f", gt = 2, lt = 3 }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/f", gt = 2, lt = 2.5 }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/s", gt = 1 }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/opts/depth", ge = 2 }]"#, call("w").args(file.clone()), true),
        // args: exists
        (r#"args = [{ pointer = "/path", exists = true }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/z", exists = true }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/missing", exists = true }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/missing", exists = false }]"#, call("w").args(file.clone()), true),
        (r#"args = [{ pointer = "/path", exists = false }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/missing", glob = "*" }]"#, call("w").args(file.clone()), false),
        (r#"args = [{ pointer = "/path", exists = true }]"#, call("w"), false),
        // args: all must hold
        (
            r#"args = [{ pointer = "/path", glob = "/tmp/*" }, { pointer = "/n", lt = 10 }]"#,
            call("w").args(file.clone()),
            true,
        ),
        (
            r#"args = [{ pointer = "/path", glob = "/tmp/*" }, { pointer = "/n", lt = 1 }]"#,
            call("w").args(file.clone()),
            false,
        ),
        // principal
        (r#"principal = "local""#, call("r"), true),
        (r#"principal = "alice""#, call("r"), false),
        (r#"principal = "team-*""#, call("r").by("team-ops"), true),
        // everything at once
        (
            r#"server = "fs"
tool = "*write*"
method = "tools/call"
annotations = { readOnlyHint = false }
args = [{ pointer = "/path", glob = "/etc/**" }]
principal = "local""#,
            call("write_file").args(json!({"path": "/etc/passwd"})),
            true,
        ),
        (
            r#"server = "fs"
tool = "*write*"
args = [{ pointer = "/path", glob = "/etc/**" }]
principal = "local""#,
            call("write_file").args(json!({"path": "/home/passwd"})),
            false,
        ),
        // no condition: everything
        ("", other(Method::Elicit, ""), true),
    ];
    let defaults = "[policy.defaults]\ntools = \"allow\"\nsampling = \"allow\"\n";
    for (i, (conditions, req, expected)) in cases.iter().enumerate() {
        let p = policy(&format!("{defaults}[[policy.rules]]\n{conditions}\ndecision = \"deny\"\n"));
        let d = p.decide(&req.request());
        assert_eq!(d.action == Action::Deny, *expected, "case {i}: `{conditions}` for {req:?}: {d}");
        let e = p.explain(&req.request());
        assert_eq!(e.decision, d, "case {i}");
        assert_eq!(e.misses.len(), usize::from(!expected), "case {i}");
        if !expected {
            assert!(!e.misses[0].why.is_empty(), "case {i}");
        }
    }
}

#[test]
fn first_match_wins() {
    let p = policy(
        r#"
[[policy.rules]]
name = "secrets"
args = [{ pointer = "/path", glob = "**/.ssh/**" }]
decision = "deny"
reason = "keys stay here"

[[policy.rules]]
tool = "*read*"
decision = "allow"

[[policy.rules]]
tool = "*"
decision = "ask"
"#,
    );
    let d = p.decide(&call("read_file").args(json!({"path": "/home/u/.ssh/id"})).request());
    assert_eq!(d.action, Action::Deny);
    assert_eq!(d.source, Source::Rule { index: 0, name: Some("secrets".into()) });
    assert_eq!(d.reason.as_deref(), Some("keys stay here"));
    assert_eq!(d.refusal(), "denied by policy: rule `secrets` (policy.rules[0]): keys stay here");
    let d = p.decide(&call("read_file").args(json!({"path": "/tmp/x"})).request());
    assert_eq!((d.action, d.source.clone()), (Action::Allow, Source::Rule { index: 1, name: None }));
    assert_eq!(p.decide(&call("write_file").request()).action, Action::Ask);
    assert_eq!(p.len(), 3);
}

#[test]
fn every_default() {
    let cases: Vec<(&str, Req, Action, DefaultKind)> = vec![
        ("", call("x"), Action::Ask, DefaultKind::Tools),
        ("", call("x").ann(ro(true)), Action::Ask, DefaultKind::Tools),
        ("", call("x").trusted(), Action::Ask, DefaultKind::Tools),
        ("", call("x").trusted().ann(ro(false)), Action::Ask, DefaultKind::Tools),
        ("", call("x").trusted().ann(ro(true)), Action::Allow, DefaultKind::TrustedReadOnly),
        ("", other(Method::ReadResource, "file:///a"), Action::Allow, DefaultKind::Resources),
        ("", other(Method::GetPrompt, "p"), Action::Allow, DefaultKind::Prompts),
        ("", other(Method::CreateMessage, ""), Action::Ask, DefaultKind::Sampling),
        ("", other(Method::Elicit, ""), Action::Allow, DefaultKind::Elicitation),
        ("tools = \"deny\"", call("x"), Action::Deny, DefaultKind::Tools),
        ("tools = \"allow\"", call("x"), Action::Allow, DefaultKind::Tools),
        ("trusted_read_only = \"ask\"", call("x").trusted().ann(ro(true)), Action::Ask, DefaultKind::TrustedReadOnly),
        ("resources = \"ask\"", other(Method::ReadResource, "file:///a"), Action::Ask, DefaultKind::Resources),
        ("prompts = \"deny\"", other(Method::GetPrompt, "p"), Action::Deny, DefaultKind::Prompts),
        ("sampling = \"deny\"", other(Method::CreateMessage, ""), Action::Deny, DefaultKind::Sampling),
        ("elicitation = \"ask\"", other(Method::Elicit, ""), Action::Ask, DefaultKind::Elicitation),
    ];
    for (i, (defaults, req, action, kind)) in cases.iter().enumerate() {
        let p = policy(&format!("[policy.defaults]\n{defaults}\n"));
        let d = p.decide(&req.request());
        assert_eq!((d.action, d.source.clone()), (*action, Source::Default { default: *kind }), "case {i}: {defaults}");
        assert!(d.reason.is_none() && !d.review_result && d.rate.is_none() && d.always.is_none(), "case {i}");
    }
    assert_eq!(Policy::default().decide(&call("x").request()).action, Action::Ask);
    assert_eq!(DefaultKind::TrustedReadOnly.key(), "trusted_read_only");
}

#[test]
fn compile_errors_name_the_field_and_leave_values_out() {
    let cases: Vec<(&str, &str, &str)> = vec![
        ("tool = \"x\"", "policy.rules[0].decision", "missing"),
        ("decision = \"sometimes\"", "policy.rules[0].decision", "allow, ask, deny"),
        ("decision = \"deny\"\nserver = \"[sec\"", "policy.rules[0].server", "not a glob"),
        ("decision = \"deny\"\ntool = \"{a\"", "policy.rules[0].tool", "not a glob"),
        ("decision = \"deny\"\nprincipal = \"[\"", "policy.rules[0].principal", "not a glob"),
        ("decision = \"deny\"\nmethod = \"tools/list\"", "policy.rules[0].method", "tools/call"),
        ("decision = \"deny\"\nmethod = [\"tools/call\", \"x\"]", "policy.rules[0].method[1]", "one of"),
        ("decision = \"deny\"\nmethod = []", "policy.rules[0].method", "empty"),
        (
            "decision = \"deny\"\nannotations = { readonlyHint = true }",
            "policy.rules[0].annotations.readonlyHint",
            "readOnlyHint",
        ),
        (
            "decision = \"deny\"\nannotations = { readOnlyHint = \"yes\" }",
            "policy.rules[0].annotations.readOnlyHint",
            "true or false",
        ),
        ("decision = \"deny\"\nargs = [{ glob = \"*\" }]", "policy.rules[0].args[0].pointer", "missing"),
        (
            "decision = \"deny\"\nargs = [{ pointer = \"path\", glob = \"*\" }]",
            "policy.rules[0].args[0].pointer",
            "starts with",
        ),
        ("decision = \"deny\"\nargs = [{ pointer = \"/p\" }]", "policy.rules[0].args[0]", "needs a test"),
        (
            "decision = \"deny\"\nargs = [{ pointer = \"/p\", glob = \"a\" }, { pointer = \"/p\", regex = \"(s3cr3t\" }]",
            "policy.rules[0].args[1].regex",
            "not a regular expression",
        ),
        (
            "decision = \"deny\"\nargs = [{ pointer = \"/p\", regex = '(a)\\1' }]",
            "policy.rules[0].args[0].regex",
            "back-references",
        ),
        (
            "decision = \"deny\"\nargs = [{ pointer = \"/p\", regex = '(?:a{1000}){1000}' }]",
            "policy.rules[0].args[0].regex",
            "too large",
        ),
        (
            "decision = \"deny\"\nargs = [{ pointer = \"/p\", glob = \"[s3cr3t\" }]",
            "policy.rules[0].args[0].glob",
            "not a glob",
        ),
        ("decision = \"deny\"\nargs = [{ pointer = \"/p\", lt = nan }]", "policy.rules[0].args[0].lt", "finite"),
        (
            "decision = \"deny\"\nargs = [{ pointer = \"/p\", exists = false, equals = 1 }]",
            "policy.rules[0].args[0].exists",
            "cannot be combined",
        ),
        ("decision = \"allow\"\nhide = true", "policy.rules[0].hide", "only a `deny`"),
        ("decision = \"deny\"\nreview_result = true", "policy.rules[0].review_result", "no result"),
        ("decision = \"allow\"\nrate = \"s3cr3t\"", "policy.rules[0].rate", "like \"10/min\""),
        ("decision = \"allow\"\nrate = \"0/min\"", "policy.rules[0].rate", "≥ 1"),
        ("decision = \"deny\"\nrate = \"1/min\"", "policy.rules[0].rate", "deny"),
        ("decision = \"allow\"\nrate_by = \"tool\"", "policy.rules[0].rate_by", "needs `rate`"),
        (
            "decision = \"allow\"\nrate = \"1/s\"\nrate_by = \"s3cr3t\"",
            "policy.rules[0].rate_by",
            "principal, server, tool",
        ),
        ("decision = \"allow\"\nname = \" \"", "policy.rules[0].name", "empty"),
    ];
    for (i, (rule, field, message)) in cases.iter().enumerate() {
        let (raw, _) = raw::from_toml(&format!("[[policy.rules]]\n{rule}\n")).expect("parses");
        let err = Policy::compile(&raw).expect_err(rule);
        assert_eq!(err.field.as_deref(), Some(*field), "case {i}: {err}");
        assert!(err.message.contains(message), "case {i}: {err}");
        assert!(!err.to_string().contains("s3cr3t"), "case {i}: {err}");
    }
    let (raw, _) =
        raw::from_toml("[[policy.rules]]\ndecision = \"allow\"\n[[policy.rules]]\ndecision = \"deny\"\n[[policy.rules]]\nname = \"a\"\ndecision = \"ask\"\n[[policy.rules]]\nid = \"a\"\ndecision = \"ask\"\n")
            .expect("parses");
    let err = Policy::compile(&raw).expect_err("duplicate");
    assert_eq!(err.field.as_deref(), Some("policy.rules[3].name"));
    let (raw, _) = raw::from_toml("[policy.defaults]\nsampling = \"s3cr3t\"\n").expect("parses");
    let err = Policy::compile(&raw).expect_err("bad default");
    assert_eq!(err.field.as_deref(), Some("policy.defaults.sampling"));
    assert!(!err.to_string().contains("s3cr3t"));
}

#[test]
fn explain_says_why_each_rule_above_did_not_match() {
    let p = policy(
        r#"
[[policy.rules]]
name = "reads"
tool = "*__read*"
decision = "allow"

[[policy.rules]]
server = "git"
method = ["prompts/get", "resources/read"]
decision = "deny"

[[policy.rules]]
args = [{ pointer = "/path", glob = "/etc/**" }, { pointer = "/mode", equals = "w" }]
principal = "alice"
decision = "deny"

[[policy.rules]]
name = "writes"
tool = "*write*"
decision = "ask"
reason = "writes change files"
review_result = true
rate = "10/min"
rate_by = "tool"

[[policy.rules]]
decision = "deny"
"#,
    );
    let req = call("write_file").args(json!({"path": "/tmp/x", "mode": "w"}));
    let e = p.explain(&req.request());
    assert_eq!(e.misses.len(), 3);
    assert_eq!(
        e.to_string(),
        "tools/call of tool `write_file` (exposed as `fs__write_file`) of server `fs`, by `local`
decision: ask by rule `writes` (policy.rules[3]): writes change files
  the result is shown to the person before it reaches the model
  rate limit: 10/min per tool
rules above it that did not match:
  policy.rules[0] `reads`: tool `write_file` (exposed as `fs__write_file`) does not match `*__read*`
  policy.rules[1]: method `tools/call` is not one of `prompts/get`, `resources/read`; server `fs` does not match `git`
  policy.rules[2]: principal `local` does not match `alice`; argument `/path` does not match glob `/etc/**`
"
    );
    // The argument's value is never shown, only the rule's.
    let secret = call("x").args(json!({"path": 7, "mode": "s3cr3t"})).ann(ro(true));
    let text = p.explain(&secret.request()).to_string();
    assert!(text.contains("argument `/path` is not a string (for glob `/etc/**`)"), "{text}");
    assert!(text.contains("argument `/mode` does not equal \"w\""), "{text}");
    assert!(!text.contains("s3cr3t"), "{text}");
    assert!(text.contains("decision: deny by policy.rules[4]"), "{text}");

    let p = policy(
        "[[policy.rules]]\nannotations = { readOnlyHint = true, destructiveHint = false }\ndecision = \"allow\"\n",
    );
    let e = p.explain(&call("x").request());
    assert_eq!(
        e.to_string(),
        "tools/call of tool `x` (exposed as `fs__x`) of server `fs`, by `local`
decision: ask by the default policy.defaults.tools (no rule matched)
rules that did not match:
  policy.rules[0]: annotation `readOnlyHint` is not declared (so false), not true; annotation `destructiveHint` is not declared (so true), not false
"
    );
    let e = p.explain(&other(Method::CreateMessage, "").server("llm").request());
    assert_eq!(e.request, "sampling/createMessage from server `llm`, by `local`");
    assert_eq!(e.misses[0].why, ["the rule matches annotations of tools, and this is sampling/createMessage"]);
    let json = serde_json::to_value(&e).expect("json");
    assert_eq!(json["decision"]["action"], "ask");
    assert_eq!(json["decision"]["source"], json!({"kind": "default", "default": "sampling"}));
    assert_eq!(json["misses"][0]["index"], 0);
}

#[test]
fn hiding() {
    let p = policy(
        r#"
[[policy.rules]]
tool = "*delete*"
decision = "deny"
hide = true

[[policy.rules]]
tool = "*write*"
args = [{ pointer = "/path", glob = "/tmp/**" }]
decision = "allow"

[[policy.rules]]
tool = "*write*"
decision = "deny"
hide = true

[[policy.rules]]
tool = "*move*"
principal = "admin"
decision = "deny"
hide = true

[[policy.rules]]
tool = "*exec*"
decision = "deny"

[[policy.rules]]
annotations = { destructiveHint = true }
method = "tools/call"
decision = "deny"
hide = true

[[policy.rules]]
server = "db"
method = "prompts/get"
decision = "deny"
hide = true
"#,
    );
    let hides = |tool: &str, a: Option<&ToolAnnotations>| p.hides("fs", tool, &format!("fs__{tool}"), a, false);
    let safe = ToolAnnotations::new().with_destructive(false);
    assert!(hides("delete_file", None));
    assert!(p.hides("fs", "rm", "fs__delete", Some(&safe), false), "the exposed name counts too");
    // An allow with arguments comes first: some calls go through, so it is listed...
    assert!(!hides("write_file", None));
    // ...though a call that the allow does not cover is still denied.
    let d = p.decide(&call("write_file").args(json!({"path": "/etc/x"})).request());
    assert_eq!((d.action, d.hide), (Action::Deny, true));
    // A principal-scoped deny hides nothing.
    assert!(!hides("move_file", Some(&safe)));
    assert!(!hides("exec", None), "deny without hide");
    assert!(hides("anything", None), "destructive by default");
    assert!(!hides("anything", Some(&safe)));
    assert!(!p.hides("db", "query", "db__query", Some(&safe), false), "the prompts rule is not about tools");

    let allow_list = policy(
        "[policy.defaults]\ntools = \"deny\"\nhide_denied = true\n[[policy.rules]]\ntool = \"read*\"\ndecision = \"allow\"\n",
    );
    assert!(!allow_list.hides("fs", "read", "fs__read", None, false));
    assert!(allow_list.hides("fs", "write", "fs__write", None, false));
    let d = allow_list.decide(&call("write").request());
    assert_eq!((d.action, d.hide), (Action::Deny, true));
    assert!(!policy("[policy.defaults]\ntools = \"deny\"\n").hides("fs", "w", "fs__w", None, false));
    let trusted = policy("[policy.defaults]\ntools = \"deny\"\nhide_denied = true\n");
    assert!(!trusted.hides("fs", "r", "fs__r", Some(&ro(true)), true), "trusted read-only is allowed");
    assert!(trusted.hides("fs", "r", "fs__r", Some(&ro(true)), false));
}

#[test]
fn always_answers_an_ask_and_nothing_else() {
    let p = policy(
        r#"
[[policy.rules]]
tool = "rm"
decision = "deny"

[[policy.rules]]
tool = "fetch"
decision = "ask"
review_result = true
rate = "2/min"

[[policy.rules]]
tool = "ls"
decision = "allow"
"#,
    );
    let always = |tool: &str| {
        let mut r = AlwaysRule::new("fs", tool);
        r.id = format!("id-{tool}");
        r
    };
    let stored = vec![always("rm"), always("fetch"), always("ls"), always("cat"), always("cp").principal("alice")];
    let rm = p.decide_with(&call("rm").request(), &stored);
    assert_eq!((rm.action, rm.always.as_deref()), (Action::Deny, None), "a configured deny wins");
    let fetch = p.decide_with(&call("fetch").request(), &stored);
    assert_eq!((fetch.action, fetch.always.as_deref()), (Action::Allow, Some("id-fetch")));
    assert!(fetch.review_result && fetch.rate.is_some(), "the asking rule's review and rate still apply");
    assert_eq!(fetch.source, Source::Rule { index: 1, name: None });
    let ls = p.decide_with(&call("ls").request(), &stored);
    assert_eq!((ls.action, ls.always.as_deref()), (Action::Allow, None));
    let cat = p.decide_with(&call("cat").request(), &stored);
    assert_eq!((cat.action, cat.always.as_deref()), (Action::Allow, Some("id-cat")), "answers the default's ask");
    assert_eq!(p.decide_with(&call("cp").request(), &stored).action, Action::Ask, "alice's answer is hers");
    assert_eq!(p.decide_with(&call("cp").by("alice").request(), &stored).action, Action::Allow);
    assert_eq!(p.decide_with(&call("cat").server("git").request(), &stored).action, Action::Ask);
    assert_eq!(p.decide_with(&other(Method::GetPrompt, "cat").request(), &stored).action, Action::Allow);
    let prompt = policy("[policy.defaults]\nprompts = \"ask\"\n");
    assert_eq!(prompt.decide_with(&other(Method::GetPrompt, "cat").request(), &stored).action, Action::Ask);
    // Renaming or re-prefixing does not matter: the upstream name does.
    let renamed = call("cat").exposed("files__kitty");
    assert_eq!(p.decide_with(&renamed.request(), &stored).action, Action::Allow);
    let text = p.explain_with(&call("cat").request(), &stored).to_string();
    assert!(
        text.contains(
            "decision: allow by the stored \"always allow\" `id-cat`, which answers the ask of the default policy.defaults.tools (no rule matched)\n"
        ),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn rate_limits_are_token_buckets() {
    let p = policy(
        r#"
[[policy.rules]]
name = "fetch"
tool = "fetch"
decision = "allow"
rate = "3/min"

[[policy.rules]]
tool = "search"
decision = "allow"
rate = "2/s"
rate_by = "server"

[[policy.rules]]
tool = "*"
decision = "allow"
rate = "1/h"
rate_by = "tool"
"#,
    );
    let limits = RateLimits::new();
    let check = |req: &Req| {
        let r = req.request();
        limits.check(&p.decide(&r), &r)
    };
    let fetch = call("fetch");
    for _ in 0..3 {
        assert_eq!(check(&fetch), Ok(()));
    }
    assert_eq!(check(&fetch), Err(Duration::from_secs(20)));
    assert_eq!(check(&fetch.clone().by("bob")), Ok(()), "per principal by default");
    tokio::time::advance(Duration::from_secs(19)).await;
    assert_eq!(check(&fetch), Err(Duration::from_secs(1)));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(check(&fetch), Ok(()));
    assert_eq!(check(&fetch), Err(Duration::from_secs(20)));
    tokio::time::advance(Duration::from_secs(3600)).await;
    for _ in 0..3 {
        assert_eq!(check(&fetch), Ok(()), "a quiet hour refills only up to the burst");
    }
    assert!(check(&fetch).is_err());

    let search = call("search");
    assert_eq!(check(&search), Ok(()));
    assert_eq!(check(&search.clone().by("bob")), Ok(()));
    assert_eq!(check(&search.clone().by("carol")), Err(Duration::from_millis(500)), "per server");
    assert_eq!(check(&search.clone().server("web")), Ok(()));

    assert_eq!(check(&call("ls")), Ok(()));
    assert_eq!(check(&call("ls").by("bob")), Err(Duration::from_secs(3600)), "per tool");
    assert_eq!(check(&call("ls").server("git")), Ok(()), "the same name of another server");
    assert_eq!(check(&call("cat")), Ok(()));

    // No rate: nothing is kept.
    let none = Policy::default();
    let before = limits.len();
    let r = call("x");
    assert_eq!(limits.check(&none.decide(&r.request()), &r.request()), Ok(()));
    assert_eq!(limits.len(), before);
}

#[tokio::test(start_paused = true)]
async fn rate_buckets_are_bounded() {
    let p = policy("[[policy.rules]]\ndecision = \"allow\"\nrate = \"1/min\"\n");
    let limits = RateLimits::with_capacity(4);
    let principals: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
    for who in &principals {
        let req = call("x").by(who);
        assert_eq!(limits.check(&p.decide(&req.request()), &req.request()), Ok(()));
        assert!(limits.len() <= 4);
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    // The most recent are still limited; the oldest were evicted and start afresh.
    let last = call("x").by("p9");
    assert!(limits.check(&p.decide(&last.request()), &last.request()).is_err());
    let first = call("x").by("p0");
    assert_eq!(limits.check(&p.decide(&first.request()), &first.request()), Ok(()));
    // Idle (full) buckets go first.
    tokio::time::advance(Duration::from_secs(60)).await;
    let new = call("x").by("new");
    assert_eq!(limits.check(&p.decide(&new.request()), &new.request()), Ok(()));
    assert_eq!(limits.len(), 1);
    limits.clear();
    assert!(limits.is_empty());
}

#[test]
fn the_store_round_trips_revokes_and_is_private() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let store = AlwaysStore::open(&state).expect("open");
    assert!(store.list().expect("list").is_empty());
    assert!(!state.exists(), "nothing is created until something is added");
    let a = store.add(AlwaysRule::new("fs", "read_file").exposed("fs__read_file").note("terminal")).expect("add");
    let b = store.add(AlwaysRule::new("fs", "write_file").principal("alice")).expect("add");
    assert_ne!(a, b);
    assert_eq!(store.add(AlwaysRule::new("fs", "read_file")).expect("add"), a, "no duplicates");
    let c = store.add(AlwaysRule::new("fs", "read_file").principal("bob")).expect("add");
    assert_ne!(a, c, "another principal is another rule");

    let reopened = AlwaysStore::open(&state).expect("open");
    let rules = reopened.list().expect("list");
    assert_eq!(rules.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [a.as_str(), b.as_str(), c.as_str()]);
    assert_eq!(rules[0].exposed.as_deref(), Some("fs__read_file"));
    assert_eq!(rules[0].note.as_deref(), Some("terminal"));
    assert_eq!(rules[1].principal.as_deref(), Some("alice"));
    assert!(rules[0].created_at > 1_600_000_000);
    assert_eq!(rules[0].method, Method::CallTool);

    // A policy with the store sees a change made through another handle at its next decision.
    let p = Policy::default().with_store(Arc::new(store));
    assert_eq!(p.decide(&call("read_file").request()).always.as_deref(), Some(a.as_str()));
    assert!(reopened.revoke(&a).expect("revoke"));
    assert!(!reopened.revoke(&a).expect("revoke again"));
    assert_eq!(p.decide(&call("read_file").request()).action, Action::Ask);
    assert_eq!(p.decide(&call("read_file").by("bob").request()).always.as_deref(), Some(c.as_str()));
    assert_eq!(p.store().map(|s| s.list().expect("list").len()), Some(2));

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &std::path::Path| std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode(reopened.path()), 0o600);
        assert_eq!(mode(&state), 0o700);
    }
    let leftovers: Vec<_> = std::fs::read_dir(&state)
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let text = std::fs::read_to_string(reopened.path()).expect("read");
    let json: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(json["version"], 1);
    assert_eq!(json["rules"][0]["method"], "tools/call");
}

#[test]
fn a_broken_store_is_an_error_and_asks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(portico_host::policy::store::FILE_NAME);
    std::fs::write(&path, "{not json").expect("write");
    let err = AlwaysStore::open(dir.path()).expect_err("corrupt");
    assert!(err.to_string().contains("not a store"), "{err}");
    std::fs::write(&path, r#"{"version": 9, "rules": []}"#).expect("write");
    assert!(AlwaysStore::open(dir.path()).expect_err("newer").to_string().contains("version 9"));
    std::fs::write(&path, r#"{"version": 1, "rules": []}"#).expect("write");
    let store = Arc::new(AlwaysStore::open(dir.path()).expect("open"));
    let id = store.add(AlwaysRule::new("fs", "x")).expect("add");
    let p = Policy::default().with_store(store.clone());
    assert_eq!(p.decide(&call("x").request()).always, Some(id));
    std::fs::write(&path, "garbage").expect("write");
    assert_eq!(p.decide(&call("x").request()).action, Action::Ask, "an unreadable store answers nothing");
    assert!(store.add(AlwaysRule::new("fs", "y")).is_err(), "and is not overwritten");
}

#[test]
fn concurrent_adds_are_all_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let state = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let store = AlwaysStore::open(&state).expect("open");
                for j in 0..5 {
                    store.add(AlwaysRule::new("fs", format!("t{i}-{j}"))).expect("add");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    assert_eq!(AlwaysStore::open(dir.path()).expect("open").list().expect("list").len(), 40);
}

#[test]
fn requests_from_the_router() {
    assert_eq!(Method::of_call(portico_host::router::Method::CallTool), Some(Method::CallTool));
    assert_eq!(Method::of_call(portico_host::router::Method::ReadResource), Some(Method::ReadResource));
    assert_eq!(Method::of_call(portico_host::router::Method::GetPrompt), Some(Method::GetPrompt));
    for m in Method::ALL {
        assert_eq!(Method::parse(m.as_str()), Some(m));
    }
}

// ---------------------------------------------------------------------------------------------
// `decide` against a naive reference implementation.

mod reference {
    use super::*;
    use proptest::prelude::*;

    /// A glob with `*` and `?` only; with `sep`, neither crosses `/` (and `**` does).
    pub fn glob(p: &[u8], s: &[u8], sep: bool) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) if sep && rest.first() == Some(&b'*') => {
                let rest = &rest[1..];
                (0..=s.len()).any(|i| glob(rest, &s[i..], sep))
            }
            Some((b'*', rest)) => {
                (0..=s.len()).take_while(|&i| i == 0 || !(sep && s[i - 1] == b'/')).any(|i| glob(rest, &s[i..], sep))
            }
            Some((b'?', rest)) => s.first().is_some_and(|c| !(sep && *c == b'/')) && glob(rest, &s[1..], sep),
            Some((c, rest)) => s.first() == Some(c) && glob(rest, &s[1..], sep),
        }
    }

    #[derive(Debug, Clone)]
    pub enum Test {
        Equals(Value),
        Glob(&'static str),
        Prefix(&'static str),
        Suffix(&'static str),
        Lt(f64),
        Ge(f64),
        Exists(bool),
    }

    #[derive(Debug, Clone)]
    pub struct Rule {
        pub server: Option<&'static str>,
        pub tool: Option<&'static str>,
        pub methods: Option<Vec<Method>>,
        pub read_only: Option<bool>,
        pub args: Vec<(&'static str, Test)>,
        pub principal: Option<&'static str>,
        pub decision: &'static str,
    }

    impl Rule {
        pub fn raw(&self) -> RawRule {
            let mut r = RawRule::default();
            r.server = self.server.map(str::to_owned);
            r.tool = self.tool.map(str::to_owned);
            r.method =
                self.methods.as_ref().map(|m| raw::OneOrMany::Many(m.iter().map(|m| m.as_str().to_owned()).collect()));
            r.annotations = self.read_only.map(|b| {
                let mut m = serde_json::Map::new();
                m.insert("readOnlyHint".into(), Value::Bool(b));
                m
            });
            r.args = self
                .args
                .iter()
                .map(|(p, t)| {
                    let mut a = RawArg::default();
                    a.pointer = Some((*p).to_owned());
                    match t {
                        Test::Equals(v) => a.equals = Some(v.clone()),
                        Test::Glob(g) => a.glob = Some((*g).to_owned()),
                        Test::Prefix(s) => a.regex = Some(format!("^{}", regex_escape(s))),
                        Test::Suffix(s) => a.regex = Some(format!("{}$", regex_escape(s))),
                        Test::Lt(n) => a.lt = Some(*n),
                        Test::Ge(n) => a.ge = Some(*n),
                        Test::Exists(b) => a.exists = Some(*b),
                    }
                    a
                })
                .collect();
            r.principal = self.principal.map(str::to_owned);
            r.decision = Some(self.decision.to_owned());
            r
        }

        pub fn matches(&self, q: &Req) -> bool {
            let has_target = !matches!(q.method, Method::CreateMessage | Method::Elicit);
            self.methods.as_ref().is_none_or(|m| m.contains(&q.method))
                && self.server.is_none_or(|g| glob(g.as_bytes(), q.server.as_bytes(), false))
                && self.tool.is_none_or(|g| {
                    has_target
                        && (glob(g.as_bytes(), q.name.as_bytes(), false)
                            || glob(g.as_bytes(), q.exposed.as_bytes(), false))
                })
                && self.read_only.is_none_or(|want| {
                    q.method == Method::CallTool
                        && q.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false) == want
                })
                && self.principal.is_none_or(|g| glob(g.as_bytes(), q.principal.as_bytes(), false))
                && self.args.iter().all(|(p, t)| {
                    let v = q.args.pointer(p);
                    match t {
                        Test::Exists(b) => v.is_some() == *b,
                        Test::Equals(want) => {
                            v.is_some_and(|v| v == want || (v.as_f64().is_some() && v.as_f64() == want.as_f64()))
                        }
                        Test::Glob(g) => {
                            v.and_then(Value::as_str).is_some_and(|s| glob(g.as_bytes(), s.as_bytes(), true))
                        }
                        Test::Prefix(x) => v.and_then(Value::as_str).is_some_and(|s| s.starts_with(x)),
                        Test::Suffix(x) => v.and_then(Value::as_str).is_some_and(|s| s.ends_with(x)),
                        Test::Lt(n) => v.and_then(Value::as_f64).is_some_and(|f| f < *n),
                        Test::Ge(n) => v.and_then(Value::as_f64).is_some_and(|f| f >= *n),
                    }
                })
        }
    }

    fn regex_escape(s: &str) -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_string() } else { format!("\\{c}") }).collect()
    }

    /// The action and the index of the deciding rule (`None`: a default).
    pub fn decide(rules: &[Rule], always: &[(String, String, Option<String>)], q: &Req) -> (Action, Option<usize>) {
        let (action, index) = match rules.iter().position(|r| r.matches(q)) {
            Some(i) => (Action::parse(rules[i].decision).unwrap_or(Action::Deny), Some(i)),
            None => {
                let ro = q.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
                let a = match q.method {
                    Method::CallTool if q.trusted && ro => Action::Allow,
                    Method::CallTool => Action::Ask,
                    Method::ReadResource | Method::GetPrompt | Method::Elicit => Action::Allow,
                    _ => Action::Ask,
                };
                (a, None)
            }
        };
        let answered = always.iter().any(|(server, tool, principal)| {
            q.method == Method::CallTool
                && *server == q.server
                && *tool == q.name
                && principal.as_ref().is_none_or(|p| *p == q.principal)
        });
        (if action == Action::Ask && answered { Action::Allow } else { action }, index)
    }

    fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
        proptest::sample::select(items)
    }

    const SERVERS: &[&str] = &["fs", "git", "f?", "g*", "*"];
    const TOOLS: &[&str] = &["read", "write", "*read*", "fs__*", "*", "w?ite"];
    const PRINCIPALS: &[&str] = &["local", "alice", "a*"];
    const GLOBS: &[&str] = &["/tmp/*", "/tmp/**", "*", "/etc/?", "**/x"];
    const STRINGS: &[&str] = &["/tmp/a", "/tmp/a/b", "/etc/x", "/x", "a", "b/x"];

    fn json_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            pick(STRINGS).prop_map(Value::from),
            (-3i64..10).prop_map(Value::from),
            (-3i64..10).prop_map(|n| Value::from(n as f64 + 0.5)),
            Just(Value::Null),
            Just(Value::Bool(true)),
        ]
    }

    fn test() -> impl Strategy<Value = Test> {
        prop_oneof![
            json_value().prop_map(Test::Equals),
            pick(GLOBS).prop_map(Test::Glob),
            pick(&["/tmp", "/", "a"]).prop_map(Test::Prefix),
            pick(&["/x", "a", "b"]).prop_map(Test::Suffix),
            (-3i64..10).prop_map(|n| Test::Lt(n as f64)),
            (-3i64..10).prop_map(|n| Test::Ge(n as f64 / 2.0)),
            any::<bool>().prop_map(Test::Exists),
        ]
    }

    fn method() -> impl Strategy<Value = Method> {
        proptest::sample::select(Method::ALL.to_vec())
    }

    pub fn rule() -> impl Strategy<Value = Rule> {
        (
            proptest::option::weighted(0.3, pick(SERVERS)),
            proptest::option::weighted(0.5, pick(TOOLS)),
            proptest::option::weighted(0.3, proptest::collection::vec(method(), 1..3)),
            proptest::option::weighted(0.2, any::<bool>()),
            proptest::collection::vec((pick(&["/p", "/n", "/q/0"]), test()), 0..3),
            proptest::option::weighted(0.2, pick(PRINCIPALS)),
            pick(&["allow", "ask", "deny"]),
        )
            .prop_map(|(server, tool, methods, read_only, args, principal, decision)| Rule {
                server,
                tool,
                methods,
                read_only,
                args,
                principal,
                decision,
            })
    }

    pub fn request() -> impl Strategy<Value = Req> {
        (
            method(),
            pick(&["fs", "git", "gx"]),
            pick(&["read", "write", "read_file", "wite"]),
            any::<bool>(),
            any::<bool>(),
            proptest::option::of(proptest::option::of(any::<bool>())),
            (
                proptest::option::of(json_value()),
                proptest::option::of(json_value()),
                proptest::option::of(json_value()),
            ),
            pick(&["local", "alice", "bob"]),
        )
            .prop_map(|(method, server, name, prefixed, trusted, ann, (p, n, q0), principal)| {
                let targetless = matches!(method, Method::CreateMessage | Method::Elicit);
                let name = if targetless { "" } else { name };
                let exposed = if prefixed && !targetless { format!("{server}__{name}") } else { name.to_owned() };
                let mut args = serde_json::Map::new();
                if let Some(p) = p {
                    args.insert("p".into(), p);
                }
                if let Some(n) = n {
                    args.insert("n".into(), n);
                }
                if let Some(q0) = q0 {
                    args.insert("q".into(), Value::Array(vec![q0]));
                }
                Req {
                    method,
                    server: server.into(),
                    trusted,
                    name: name.into(),
                    exposed,
                    annotations: ann.map(|ro| {
                        let mut a = ToolAnnotations::new();
                        a.read_only_hint = ro;
                        a
                    }),
                    args: Value::Object(args),
                    principal: principal.into(),
                }
            })
    }

    pub fn always() -> impl Strategy<Value = (String, String, Option<String>)> {
        (pick(&["fs", "git"]), pick(&["read", "write", "read_file"]), proptest::option::of(pick(&["alice", "local"])))
            .prop_map(|(s, t, p)| (s.to_owned(), t.to_owned(), p.map(str::to_owned)))
    }
}

mod properties {
    use super::reference::{self, Rule};
    use super::*;
    use proptest::prelude::*;

    fn compile(rules: &[Rule]) -> Policy {
        let mut raw = RawPolicy::default();
        raw.rules = rules.iter().map(Rule::raw).collect();
        Policy::compile(&raw).expect("generated rules compile")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn decide_equals_the_reference(
            rules in proptest::collection::vec(reference::rule(), 0..6),
            stored in proptest::collection::vec(reference::always(), 0..3),
            reqs in proptest::collection::vec(reference::request(), 1..8),
        ) {
            let policy = compile(&rules);
            let always: Vec<AlwaysRule> = stored
                .iter()
                .enumerate()
                .map(|(i, (s, t, p))| {
                    let mut r = AlwaysRule::new(s.clone(), t.clone());
                    r.principal.clone_from(p);
                    r.id = i.to_string();
                    r
                })
                .collect();
            for q in &reqs {
                let d = policy.decide_with(&q.request(), &always);
                let (action, index) = reference::decide(&rules, &stored, q);
                prop_assert_eq!(d.action, action, "{:?}", q);
                match (&d.source, index) {
                    (Source::Rule { index: got, .. }, Some(want)) => prop_assert_eq!(*got, want),
                    (Source::Default { .. }, None) => {}
                    (got, want) => prop_assert!(false, "source {:?}, reference {:?}", got, want),
                }
                let e = policy.explain_with(&q.request(), &always);
                prop_assert_eq!(&e.decision, &d);
                prop_assert_eq!(e.misses.len(), index.unwrap_or(rules.len()));
                prop_assert!(e.misses.iter().all(|m| !m.why.is_empty()));
            }
        }

        #[test]
        fn a_hidden_tool_is_denied_whatever_the_call(
            rules in proptest::collection::vec(reference::rule().prop_map(|mut r| {
                if r.decision == "deny" && r.args.len() < 2 { r.decision = "deny-hide"; }
                r
            }), 0..6),
            reqs in proptest::collection::vec(reference::request(), 1..8),
        ) {
            let mut raw = RawPolicy::default();
            raw.rules = rules
                .iter()
                .map(|r| {
                    let mut rule = Rule { decision: if r.decision == "deny-hide" { "deny" } else { r.decision }, ..r.clone() }.raw();
                    rule.hide = (r.decision == "deny-hide").then_some(true);
                    rule
                })
                .collect();
            raw.defaults.tools = Some("deny".into());
            raw.defaults.hide_denied = Some(true);
            let policy = Policy::compile(&raw).expect("compiles");
            for q in reqs.iter().filter(|q| q.method == Method::CallTool) {
                let hidden = policy.hides(&q.server, &q.name, &q.exposed, q.annotations.as_ref(), q.trusted);
                if hidden {
                    let d = policy.decide(&q.request());
                    prop_assert_eq!(d.action, Action::Deny, "{:?}", q);
                    prop_assert!(d.hide);
                }
            }
        }
    }

    #[test]
    fn the_reference_glob_agrees_on_examples() {
        assert!(reference::glob(b"/tmp/*", b"/tmp/a", true));
        assert!(!reference::glob(b"/tmp/*", b"/tmp/a/b", true));
        assert!(reference::glob(b"/tmp/**", b"/tmp/a/b", true));
        assert!(reference::glob(b"**/x", b"b/x", true));
        assert!(reference::glob(b"*", b"a/b", false));
        assert!(!reference::glob(b"*", b"a/b", true));
        assert!(reference::glob(b"w?ite", b"write", false));
    }
}
