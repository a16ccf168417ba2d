//! `[policy.defaults]`: what is decided when no rule matches.

use serde::Serialize;

use super::raw::RawDefaults;
use super::{Action, Decision, Method, Request, Source};
use crate::config::ConfigError;

/// Which default decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DefaultKind {
    /// `tools`: a tool call.
    Tools,
    /// `trusted_read_only`: a tool call of a trusted server whose tool says `readOnlyHint`.
    TrustedReadOnly,
    /// `resources`: a resource read.
    Resources,
    /// `prompts`: a prompt get.
    Prompts,
    /// `sampling`: an upstream's sampling request.
    Sampling,
    /// `elicitation`: an upstream's elicitation.
    Elicitation,
}

impl DefaultKind {
    /// Its key under `[policy.defaults]`.
    pub fn key(self) -> &'static str {
        match self {
            DefaultKind::Tools => "tools",
            DefaultKind::TrustedReadOnly => "trusted_read_only",
            DefaultKind::Resources => "resources",
            DefaultKind::Prompts => "prompts",
            DefaultKind::Sampling => "sampling",
            DefaultKind::Elicitation => "elicitation",
        }
    }
}

/// The defaults, validated.
///
/// | key | when | default |
/// | --- | --- | --- |
/// | `tools` | a tool call | `ask` |
/// | `trusted_read_only` | a tool call of a `trusted = true` server whose tool says `readOnlyHint: true` | `allow` |
/// | `resources` | `resources/read` | `allow` |
/// | `prompts` | `prompts/get` | `allow` |
/// | `sampling` | an upstream's `sampling/createMessage` | `ask` |
/// | `elicitation` | an upstream's `elicitation/create` | `allow` |
/// | `hide_denied` | a tool denied by default is left out of `tools/list` | `false` |
///
/// Why: a tool may change the world, so a person is asked unless they said they trust the
/// server's word that it does not; reading a resource or getting a prompt only brings text
/// to the model; a sampling request spends the person's model and may carry anything, so
/// they see it; an elicitation is already put to the person, with the asking server's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Defaults {
    /// A tool call.
    pub tools: Action,
    /// A read-only tool of a trusted server.
    pub trusted_read_only: Action,
    /// A resource read.
    pub resources: Action,
    /// A prompt get.
    pub prompts: Action,
    /// An upstream's sampling request.
    pub sampling: Action,
    /// An upstream's elicitation.
    pub elicitation: Action,
    /// Leave tools denied by default out of `tools/list`.
    pub hide_denied: bool,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            tools: Action::Ask,
            trusted_read_only: Action::Allow,
            resources: Action::Allow,
            prompts: Action::Allow,
            sampling: Action::Ask,
            elicitation: Action::Allow,
            hide_denied: false,
        }
    }
}

impl Defaults {
    /// Validates `[policy.defaults]`.
    ///
    /// # Errors
    /// A value that is not `allow`, `ask` or `deny`, naming its key.
    pub fn compile(raw: &RawDefaults) -> Result<Defaults, ConfigError> {
        let d = Defaults::default();
        let get = |v: &Option<String>, default: Action, key: &str| {
            Action::from_config(v.as_deref(), default, &format!("policy.defaults.{key}"))
        };
        Ok(Defaults {
            tools: get(&raw.tools, d.tools, "tools")?,
            trusted_read_only: get(&raw.trusted_read_only, d.trusted_read_only, "trusted_read_only")?,
            resources: get(&raw.resources, d.resources, "resources")?,
            prompts: get(&raw.prompts, d.prompts, "prompts")?,
            sampling: get(&raw.sampling, d.sampling, "sampling")?,
            elicitation: get(&raw.elicitation, d.elicitation, "elicitation")?,
            hide_denied: raw.hide_denied.unwrap_or(d.hide_denied),
        })
    }

    /// Which default applies to `req`, and what it says.
    pub fn pick(&self, req: &Request<'_>) -> (DefaultKind, Action) {
        match req.method {
            Method::CallTool if req.trusted && req.annotations.and_then(|a| a.read_only_hint) == Some(true) => {
                (DefaultKind::TrustedReadOnly, self.trusted_read_only)
            }
            Method::CallTool => (DefaultKind::Tools, self.tools),
            Method::ReadResource => (DefaultKind::Resources, self.resources),
            Method::GetPrompt => (DefaultKind::Prompts, self.prompts),
            Method::CreateMessage => (DefaultKind::Sampling, self.sampling),
            Method::Elicit => (DefaultKind::Elicitation, self.elicitation),
        }
    }

    pub(super) fn decision(&self, req: &Request<'_>) -> Decision {
        let (default, action) = self.pick(req);
        Decision {
            action,
            source: Source::Default { default },
            reason: None,
            review_result: false,
            hide: action == Action::Deny && req.method == Method::CallTool && self.hide_denied,
            rate: None,
            always: None,
        }
    }
}
