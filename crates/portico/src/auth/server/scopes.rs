//! Per-method and per-tool scopes, applied by the endpoint once it has parsed the body.

use std::collections::HashMap;

/// Which scopes which JSON-RPC method, and which tool, needs.
#[derive(Debug, Default, Clone)]
pub(crate) struct ScopePolicy {
    methods: HashMap<String, Vec<String>>,
    tools: HashMap<String, Vec<String>>,
}

impl ScopePolicy {
    pub(crate) fn add_method(&mut self, method: String, scopes: Vec<String>) {
        self.methods.entry(method).or_default().extend(scopes);
    }

    pub(crate) fn add_tool(&mut self, tool: String, scopes: Vec<String>) {
        self.tools.entry(tool).or_default().extend(scopes);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.methods.is_empty() && self.tools.is_empty()
    }

    /// True when some rule names `scope`.
    pub(crate) fn mentions(&self, scope: &str) -> bool {
        self.methods.values().chain(self.tools.values()).flatten().any(|s| s == scope)
    }

    /// True when the tool named by a `tools/call` matters (some tool has rules).
    pub(crate) fn has_tool_rules(&self) -> bool {
        !self.tools.is_empty()
    }

    /// The scopes a request for `method` (calling `tool`) needs.
    pub(crate) fn needed<'a>(&'a self, method: &str, tool: Option<&str>) -> impl Iterator<Item = &'a str> {
        let m = self.methods.get(method).into_iter().flatten();
        let t = tool.and_then(|t| self.tools.get(t)).into_iter().flatten();
        m.chain(t).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_and_tool_scopes_add_up() {
        let mut p = ScopePolicy::default();
        assert!(p.is_empty());
        p.add_method("tools/call".into(), vec!["tools".into()]);
        p.add_tool("rm".into(), vec!["admin".into()]);
        assert_eq!(p.needed("tools/call", Some("rm")).collect::<Vec<_>>(), ["tools", "admin"]);
        assert_eq!(p.needed("tools/call", Some("ls")).collect::<Vec<_>>(), ["tools"]);
        assert_eq!(p.needed("tools/list", None).count(), 0);
        assert!(p.mentions("admin") && !p.mentions("root") && p.has_tool_rules());
    }
}
