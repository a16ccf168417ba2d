//! `[policy]` as written in `portico.toml`: rules, defaults, argument predicates, before
//! [`Policy::compile`](super::Policy::compile) checks them.
//!
//! Every key is optional here; what is missing or wrong is reported by `compile`, naming the
//! field (`policy.rules[2].args[0].regex`). Values that the rules compare against (`equals`,
//! `annotations`) are kept as JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::ConfigError;

/// The `[policy]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawPolicy {
    /// `[[policy.rules]]`, evaluated in order; the first that matches decides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RawRule>,
    /// `[policy.defaults]`: the decision when no rule matches.
    #[serde(default, skip_serializing_if = "RawDefaults::is_default")]
    pub defaults: RawDefaults,
}

impl RawPolicy {
    /// Whether nothing is configured (every default applies).
    pub fn is_empty(&self) -> bool {
        *self == RawPolicy::default()
    }
}

/// One `[[policy.rules]]` entry: what it matches (every condition given must hold) and what it
/// decides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawRule {
    /// A name shown in decisions, explanations and the activity log (`id` is accepted too).
    #[serde(default, alias = "id", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Glob on the server's name in the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Glob on the tool's name, the upstream's or the exposed one (either matching is enough);
    /// for `prompts/get` the prompt's name, for `resources/read` the resource's URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `tools/call`, `resources/read`, `prompts/get`, `sampling/createMessage`,
    /// `elicitation/create`, or a list of them; any method when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<OneOrMany>,
    /// Tool annotations that must have these values, e.g. `{ readOnlyHint = true }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Map<String, Value>>,
    /// Predicates on the arguments; all must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<RawArg>,
    /// Glob on the principal: the authenticated subject, or `local` for stdio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// `allow`, `ask` or `deny` (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Shown to the person and recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// With `deny`: leave the tool out of `tools/list` (see [`Policy::hides`](super::Policy::hides)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hide: Option<bool>,
    /// Show the result to the person before it goes back to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_result: Option<bool>,
    /// A rate limit such as `"10/min"` (`/s`, `/min`, `/h`, `/day`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// What the rate is counted per: `principal` (the default), `server` or `tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_by: Option<String>,
}

/// A string or a list of strings (`method = "tools/call"` or `method = ["tools/call", …]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The values, in order.
    pub fn values(&self) -> &[String] {
        match self {
            OneOrMany::One(s) => std::slice::from_ref(s),
            OneOrMany::Many(v) => v,
        }
    }
}

/// One predicate on the arguments: the value at `pointer` (a JSON pointer such as `/path` or
/// `/options/depth`) must pass every test given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawArg {
    /// The JSON pointer into the arguments (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// Equal to this JSON value (numbers compare by value: `1` equals `1.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    /// A string matching this glob; `/` separates: `*` stays within one segment, `**` crosses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// A string in which this regular expression finds a match (anchor with `^…$` for the
    /// whole string). Linear time: no look-around or back-references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// A number less than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lt: Option<f64>,
    /// A number less than or equal to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub le: Option<f64>,
    /// A number greater than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gt: Option<f64>,
    /// A number greater than or equal to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ge: Option<f64>,
    /// `true`: the value is there; `false`: it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
}

/// `[policy.defaults]`: each is `allow`, `ask` or `deny`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawDefaults {
    /// A tool call no rule matched; `ask` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// A tool call no rule matched, of a `trusted = true` server whose tool says
    /// `readOnlyHint: true`; `allow` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_read_only: Option<String>,
    /// A resource read; `allow` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<String>,
    /// A prompt get; `allow` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<String>,
    /// An upstream's `sampling/createMessage`; `ask` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<String>,
    /// An upstream's `elicitation/create` (always shown to the person with the server's name);
    /// `allow` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<String>,
    /// `true`: a tool that no rule matches and whose default is `deny` is left out of
    /// `tools/list` (an allow-list: `tools = "deny"` and a rule for each tool offered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hide_denied: Option<bool>,
}

impl RawDefaults {
    fn is_default(&self) -> bool {
        *self == RawDefaults::default()
    }
}

/// Reads the `[policy]` table of `portico.toml` text (everything else in the file is left
/// alone). Unknown keys under `[policy]` come back as warnings.
///
/// # Errors
/// On a syntax error or a value of the wrong type, with line, column and key, and without the
/// value.
pub fn from_toml(text: &str) -> Result<(RawPolicy, Vec<String>), ConfigError> {
    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        policy: RawPolicy,
    }
    let mut unknown = Vec::new();
    let de = toml::Deserializer::new(text);
    let file: File = serde_ignored::deserialize(de, |path| {
        let path = path.to_string();
        if path.starts_with("policy.") {
            unknown.push(format!("{path}: unknown key (ignored)"));
        }
    })
    .map_err(|e| toml_error(&e, text))?;
    Ok((file.policy, unknown))
}

/// A TOML error as a [`ConfigError`] at its position, naming the key on that line, with the
/// value (which may be a secret) left out of the message.
fn toml_error(e: &toml::de::Error, text: &str) -> ConfigError {
    let message = e.message();
    let message = match message.find("expected") {
        Some(at) if message.starts_with("invalid") => format!("wrong kind of value: {}", &message[at..]),
        _ if message.starts_with("invalid") => "wrong kind of value".to_owned(),
        _ => message.lines().next().unwrap_or("invalid TOML").to_owned(),
    };
    let mut err = ConfigError::new(message);
    if let Some(span) = e.span() {
        let line_start = text.get(..span.start).and_then(|t| t.rfind('\n')).map_or(0, |i| i + 1);
        let line = text.get(line_start..).and_then(|t| t.lines().next()).unwrap_or("");
        if let Some((key, _)) = line.split_once('=') {
            let key = key.trim();
            if !key.is_empty() && !key.starts_with('[') {
                err = err.field(key.to_owned());
            }
        }
        err = err.at_offset(text, span.start);
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rules_and_defaults_and_warns_about_unknown_keys() {
        let text = r#"
[servers.fs]
command = "x"

[policy.defaults]
tools = "deny"

[[policy.rules]]
id = "reads"
tool = "fs__read*"
method = ["tools/call", "prompts/get"]
annotations = { readOnlyHint = true }
args = [{ pointer = "/path", glob = "/tmp/**", lt = 3 }]
decision = "allow"
colour = "red"
"#;
        let (raw, warnings) = from_toml(text).expect("parses");
        assert_eq!(raw.defaults.tools.as_deref(), Some("deny"));
        let rule = &raw.rules[0];
        assert_eq!(rule.name.as_deref(), Some("reads"));
        assert_eq!(rule.method.as_ref().map(OneOrMany::values).map(<[String]>::len), Some(2));
        assert_eq!(rule.args[0].lt, Some(3.0));
        assert_eq!(rule.annotations.as_ref().and_then(|a| a.get("readOnlyHint")), Some(&Value::Bool(true)));
        assert_eq!(warnings, ["policy.rules.0.colour: unknown key (ignored)"]);
        let back = toml::to_string(&std::collections::BTreeMap::from([("policy", &raw)])).expect("serializes");
        assert_eq!(from_toml(&back).map(|r| r.0).ok(), Some(raw));
    }

    #[test]
    fn errors_name_the_key_and_leave_the_value_out() {
        let text = "[[policy.rules]]\ndecision = \"allow\"\nhide = \"s3cr3t\"\n";
        let err = from_toml(text).expect_err("wrong type");
        let shown = err.to_string();
        assert_eq!(err.line, Some(3), "{shown}");
        assert_eq!(err.field.as_deref(), Some("hide"), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(from_toml("").expect("empty").0.is_empty());
    }
}
