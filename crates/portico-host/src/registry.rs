//! The registry: every upstream's tools, prompts, resources and resource templates in one
//! view, under their exposed names, each remembering where it came from.
//!
//! Built from each upstream's [`Catalog`] and its config (include, exclude, rename, prefix) by
//! [`Registry::build`]: a pure function, so the whole naming story is tested without I/O.
//!
//! - Tools and prompts are named by [`crate::names::exposed_name`]; the upstream's own name is
//!   kept in `_meta` under [`UPSTREAM_META`].
//! - A resource URI stays as it is where one server offers it; a URI offered by several is
//!   rewritten to `portico:<server>/<uri>` for every one of them (reversible, and stable when a
//!   third server joins). Templates follow the same rule.
//! - Titles, descriptions, annotations, icons and schemas pass through unchanged.

use std::collections::BTreeMap;
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use portico::schema::{Prompt, Resource, ResourceTemplate, Tool};
use serde_json::json;

use crate::config::ServerConfig;
use crate::names::exposed_name;

/// The `_meta` key under which an exposed item records its upstream: `{"server", "name"}` (or
/// `"uri"` for resources).
pub const UPSTREAM_META: &str = "dev.portico/upstream";

/// What one upstream offers, as it listed it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Catalog {
    /// Its tools, each kept as compact JSON: the registry holds them parsed, and an upstream's
    /// list is only read again when the registry is rebuilt.
    pub tools: Vec<ListedTool>,
    /// Its prompts.
    pub prompts: Vec<Prompt>,
    /// Its resources.
    pub resources: Vec<Resource>,
    /// Its resource templates.
    pub templates: Vec<ResourceTemplate>,
    /// It offers the tasks extension (`io.modelcontextprotocol/tasks`): a call from a client
    /// that declares it may become a task.
    #[serde(default)]
    pub tasks: bool,
}

/// A tool as its upstream listed it, kept as compact JSON.
///
/// A parsed [`Tool`] holds its schemas as trees of maps (several hundred bytes per map); its
/// JSON is a fraction of that. An idle gateway holds every upstream's list for the next rebuild
/// of the registry, which parses it again ([`ListedTool::tool`]); the registry itself holds the
/// parsed tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTool {
    json: Box<str>,
    name: Box<str>,
}

impl ListedTool {
    /// `tool`, as compact JSON.
    pub fn new(tool: &Tool) -> ListedTool {
        // A `Tool` serializes (its maps have string keys); should that ever fail, the tool is
        // kept as one that takes no arguments rather than lost.
        let json = serde_json::to_string(tool).unwrap_or_else(|_| {
            format!(r#"{{"name":{},"inputSchema":{{"type":"object"}}}}"#, serde_json::Value::from(tool.name.as_str()))
        });
        ListedTool { json: json.into(), name: tool.name.as_str().into() }
    }

    /// The tool's name at its upstream.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool, parsed.
    pub fn tool(&self) -> Tool {
        // It was made from a `Tool` (or read as one from a file), so it parses.
        serde_json::from_str(&self.json).unwrap_or_else(|_| Tool::without_arguments(self.name.as_ref()))
    }

    /// The compact JSON.
    pub fn json(&self) -> &str {
        &self.json
    }
}

impl From<Tool> for ListedTool {
    fn from(tool: Tool) -> Self {
        ListedTool::new(&tool)
    }
}

impl serde::Serialize for ListedTool {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw: &serde_json::value::RawValue = serde_json::from_str(&self.json).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for ListedTool {
    /// Read as a [`Tool`] (so a file that holds something else is refused), then kept compact.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Tool::deserialize(d).map(ListedTool::from)
    }
}

/// Where an exposed item comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub struct Origin {
    /// The upstream's name in the config.
    pub server: String,
    /// The item's name (or URI, or template) at the upstream.
    pub name: String,
}

/// A tool as offered: its exposed definition and its origin.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolEntry {
    /// The definition under the exposed name, shared with the served registry (one copy per
    /// tool, however many layers hold it).
    pub tool: Arc<Tool>,
    /// Where it comes from.
    pub origin: Origin,
    /// Its server offers the tasks extension, so a call may become a task.
    pub tasks: bool,
}

impl ToolEntry {
    /// The tool in the function-calling format of OpenAI's Chat Completions API:
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`.
    pub fn openai(&self) -> serde_json::Value {
        json!({
            "type": "function",
            "function": {
                "name": self.tool.name,
                "description": self.description(),
                "parameters": self.tool.input_schema,
            }
        })
    }

    /// The tool in the format of Anthropic's Messages API: `{"name", "description",
    /// "input_schema"}`.
    pub fn anthropic(&self) -> serde_json::Value {
        json!({ "name": self.tool.name, "description": self.description(), "input_schema": self.tool.input_schema })
    }

    /// The description a model reads: the tool's description, else its title, else its name.
    fn description(&self) -> &str {
        self.tool.description.as_deref().or(self.tool.title.as_deref()).unwrap_or(&self.tool.name)
    }
}

/// A prompt as offered.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptEntry {
    /// The definition under the exposed name.
    pub prompt: Prompt,
    /// Where it comes from.
    pub origin: Origin,
}

/// A resource as offered.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResourceEntry {
    /// The definition under the exposed URI.
    pub resource: Resource,
    /// Where it comes from (`name` is the upstream's URI).
    pub origin: Origin,
}

/// A resource template as offered.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TemplateEntry {
    /// The definition under the exposed template.
    pub template: ResourceTemplate,
    /// Where it comes from (`name` is the upstream's template).
    pub origin: Origin,
}

/// Two items that would be offered under one name; the first keeps it, the second is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Conflict {
    /// The exposed name both want.
    pub exposed: String,
    /// The one offered.
    pub kept: Origin,
    /// The one left out.
    pub dropped: Origin,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` of server `{}` and `{}` of server `{}` are both offered as `{}`; the second is left out (rename one with `[servers.{}] rename`)",
            self.kept.name, self.kept.server, self.dropped.name, self.dropped.server, self.exposed, self.dropped.server
        )
    }
}

/// The joined view.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Registry {
    /// Tools by exposed name.
    pub tools: BTreeMap<String, ToolEntry>,
    /// Prompts by exposed name.
    pub prompts: BTreeMap<String, PromptEntry>,
    /// Resources by exposed URI.
    pub resources: BTreeMap<String, ResourceEntry>,
    /// Templates by exposed template.
    pub templates: BTreeMap<String, TemplateEntry>,
    /// Names that clashed.
    pub conflicts: Vec<Conflict>,
}

/// Which upstream tool names a server offers, and under which name.
#[derive(Debug)]
pub struct Filter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

impl Filter {
    /// The filter of a server's `include` and `exclude` (invalid globs were refused by config
    /// validation; one that slips through matches nothing).
    pub fn new(include: &[String], exclude: &[String]) -> Self {
        let set = |globs: &[String]| {
            if globs.is_empty() {
                return None;
            }
            let mut b = GlobSetBuilder::new();
            for g in globs {
                if let Ok(g) = Glob::new(g) {
                    b.add(g);
                }
            }
            b.build().ok()
        };
        Filter { include: set(include), exclude: set(exclude) }
    }

    /// Whether the tool `name` is offered.
    pub fn allows(&self, name: &str) -> bool {
        self.include.as_ref().is_none_or(|s| s.is_match(name))
            && !self.exclude.as_ref().is_some_and(|s| s.is_match(name))
    }
}

fn upstream_meta(meta: &mut Option<portico::schema::Meta>, server: &str, key: &str, value: &str) {
    meta.get_or_insert_with(Default::default).insert(UPSTREAM_META.to_owned(), json!({ "server": server, key: value }));
}

impl Registry {
    /// Points every tool that `previous` holds unchanged at `previous`'s copy. The gateway's
    /// server keeps offering an unchanged tool as it was, so without this each rebuild would
    /// leave two copies of every tool alive: the offer's and the registry's.
    pub(crate) fn share_unchanged(&mut self, previous: &Registry) {
        for (name, entry) in &mut self.tools {
            if let Some(old) = previous.tools.get(name)
                && !Arc::ptr_eq(&old.tool, &entry.tool)
                && old == entry
            {
                entry.tool = old.tool.clone();
            }
        }
    }

    /// Joins `upstreams` (each server's config and what it lists), in the order given (the
    /// config's, by name): on a clash the earlier server keeps the name.
    pub fn build<'a>(
        upstreams: impl IntoIterator<Item = (&'a ServerConfig, &'a Catalog)>,
        separator: &str,
    ) -> Registry {
        let mut reg = Registry::default();
        let upstreams: Vec<_> = upstreams.into_iter().collect();
        let mut uri_owners: BTreeMap<&str, usize> = BTreeMap::new();
        let mut template_owners: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, catalog) in &upstreams {
            for r in &catalog.resources {
                *uri_owners.entry(r.uri.as_str()).or_default() += 1;
            }
            for t in &catalog.templates {
                *template_owners.entry(t.uri_template.as_str()).or_default() += 1;
            }
        }
        for (config, catalog) in &upstreams {
            let server = config.name.as_str();
            let filter = Filter::new(&config.include, &config.exclude);
            for listed in &catalog.tools {
                let name = listed.name();
                if !filter.allows(name) {
                    continue;
                }
                let local = config.rename.get(name).map_or(name, String::as_str);
                let exposed = exposed_name(&config.prefix, separator, local);
                let origin = Origin { server: server.to_owned(), name: name.to_owned() };
                if let Some(kept) = reg.tools.get(&exposed) {
                    reg.conflicts.push(Conflict { exposed, kept: kept.origin.clone(), dropped: origin });
                    continue;
                }
                let mut tool = listed.tool();
                upstream_meta(&mut tool.meta, server, "name", &tool.name);
                tool.name.clone_from(&exposed);
                reg.tools.insert(exposed, ToolEntry { tool: Arc::new(tool), origin, tasks: catalog.tasks });
            }
            for prompt in &catalog.prompts {
                let exposed = exposed_name(&config.prefix, separator, &prompt.name);
                let origin = Origin { server: server.to_owned(), name: prompt.name.clone() };
                if let Some(kept) = reg.prompts.get(&exposed) {
                    reg.conflicts.push(Conflict { exposed, kept: kept.origin.clone(), dropped: origin });
                    continue;
                }
                let mut prompt = prompt.clone();
                upstream_meta(&mut prompt.meta, server, "name", &prompt.name);
                prompt.name.clone_from(&exposed);
                reg.prompts.insert(exposed, PromptEntry { prompt, origin });
            }
            for resource in &catalog.resources {
                let exposed = if uri_owners.get(resource.uri.as_str()).copied().unwrap_or(0) > 1 {
                    scoped_uri(server, &resource.uri)
                } else {
                    resource.uri.clone()
                };
                let origin = Origin { server: server.to_owned(), name: resource.uri.clone() };
                if let Some(kept) = reg.resources.get(&exposed) {
                    reg.conflicts.push(Conflict { exposed, kept: kept.origin.clone(), dropped: origin });
                    continue;
                }
                let mut resource = resource.clone();
                upstream_meta(&mut resource.meta, server, "uri", &resource.uri);
                resource.uri.clone_from(&exposed);
                reg.resources.insert(exposed, ResourceEntry { resource, origin });
            }
            for template in &catalog.templates {
                let exposed = if template_owners.get(template.uri_template.as_str()).copied().unwrap_or(0) > 1 {
                    scoped_uri(server, &template.uri_template)
                } else {
                    template.uri_template.clone()
                };
                let origin = Origin { server: server.to_owned(), name: template.uri_template.clone() };
                if let Some(kept) = reg.templates.get(&exposed) {
                    reg.conflicts.push(Conflict { exposed, kept: kept.origin.clone(), dropped: origin });
                    continue;
                }
                let mut template = template.clone();
                upstream_meta(&mut template.meta, server, "uriTemplate", &template.uri_template);
                template.uri_template.clone_from(&exposed);
                reg.templates.insert(exposed, TemplateEntry { template, origin });
            }
        }
        reg
    }

    /// Every tool in OpenAI's function-calling format (see [`ToolEntry::openai`]), by name:
    /// the `tools` array of a chat completion request.
    pub fn openai_tools(&self) -> Vec<serde_json::Value> {
        self.tools.values().map(ToolEntry::openai).collect()
    }

    /// Every tool in Anthropic's format (see [`ToolEntry::anthropic`]), by name.
    pub fn anthropic_tools(&self) -> Vec<serde_json::Value> {
        self.tools.values().map(ToolEntry::anthropic).collect()
    }

    /// The upstream server and URI of an exposed resource URI: a listed resource, a scoped URI
    /// (`portico:<server>/<uri>`), or `None` (then the caller tries the templates).
    pub fn resolve_uri(&self, uri: &str) -> Option<Origin> {
        if let Some(entry) = self.resources.get(uri) {
            return Some(entry.origin.clone());
        }
        let (server, rest) = uri.strip_prefix(SCOPE)?.split_once('/')?;
        Some(Origin { server: server.to_owned(), name: rest.to_owned() })
    }

    /// The URI the gateway offers for `uri` of `server` when that differs: the scoped form
    /// (`portico:<server>/<uri>`) when the registry scopes the URI or a template of `server`
    /// is scoped; `None` when the URI is offered as it is.
    pub fn exposed_uri(&self, server: &str, uri: &str) -> Option<String> {
        let scoped = scoped_uri(server, uri);
        if self.resources.contains_key(&scoped) {
            return Some(scoped);
        }
        if self.resources.get(uri).is_some_and(|e| e.origin.server == server) {
            return None;
        }
        // A URI made from a template: scoped when this server's templates are.
        let templated =
            self.templates.values().any(|t| t.origin.server == server && t.template.uri_template.starts_with(SCOPE));
        templated.then_some(scoped)
    }

    /// The servers whose templates could produce `uri` (scoped ones resolved by
    /// [`resolve_uri`](Self::resolve_uri)), in order.
    pub fn template_servers(&self) -> Vec<String> {
        let mut servers: Vec<String> = self.templates.values().map(|t| t.origin.server.clone()).collect();
        servers.dedup();
        servers
    }
}

const SCOPE: &str = "portico:";

/// `portico:<server>/<uri>`: a URI offered by several servers, made unique and reversible.
pub fn scoped_uri(server: &str, uri: &str) -> String {
    format!("{SCOPE}{server}/{uri}")
}

/// Descriptions longer than this are worth a warning: room for instructions a person would
/// not read in full.
pub const LONG_DESCRIPTION: usize = 4096;

/// What is suspicious about a tool's description, for a warning: characters a person cannot
/// see (zero-width, bidirectional controls, Unicode tags, soft hyphens) that can hide
/// instructions meant for the model, and descriptions over [`LONG_DESCRIPTION`] bytes. The
/// description itself is passed on unchanged either way.
pub fn description_warnings(tool: &Tool) -> Vec<String> {
    let Some(text) = tool.description.as_deref() else { return Vec::new() };
    let mut out = Vec::new();
    let invisible = text.chars().filter(|c| is_invisible(*c)).count();
    if invisible > 0 {
        out.push(format!("its description has {invisible} invisible character(s)"));
    }
    if text.len() > LONG_DESCRIPTION {
        out.push(format!("its description is {} bytes long", text.len()));
    }
    out
}

fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{FEFF}'
        | '\u{E0000}'..='\u{E007F}')
}

#[cfg(test)]
mod tests {
    #[test]
    fn hidden_characters_and_long_descriptions_are_warned_about() {
        let plain = Tool::without_arguments("t").with_description("Adds two numbers.");
        assert!(super::description_warnings(&plain).is_empty());
        let hidden = Tool::without_arguments("t").with_description("Adds.\u{200B}\u{E0049}\u{E0047}\u{202E}");
        assert_eq!(super::description_warnings(&hidden), ["its description has 4 invisible character(s)"]);
        let long = Tool::without_arguments("t").with_description("a".repeat(super::LONG_DESCRIPTION + 1));
        assert_eq!(super::description_warnings(&long), [format!("its description is {} bytes long", 4097)]);
    }

    use super::*;
    use crate::config;

    fn configs(toml: &str) -> config::Config {
        config::for_test(toml)
    }

    fn tool(name: &str) -> Tool {
        Tool::without_arguments(name)
    }

    fn catalog(tools: &[&str]) -> Catalog {
        Catalog { tools: tools.iter().map(|t| ListedTool::new(&tool(t))).collect(), ..Catalog::default() }
    }

    #[test]
    fn a_listed_tool_is_kept_as_json_and_parses_back_the_same() {
        let mut t = tool("query").with_description("Runs SQL");
        t.input_schema = portico::schema::object(json!({
            "type": "object",
            "properties": { "sql": { "type": "string" }, "limit": { "type": "integer", "maximum": 1e3 } },
            "x-vendor": [1, 2.5, null]
        }));
        t.extra.insert("vendorField".into(), json!({"kept": true}));
        let listed = ListedTool::new(&t);
        assert_eq!(listed.name(), "query");
        assert_eq!(listed.tool(), t);
        assert!(!listed.json().contains('\n') && listed.json().starts_with('{'), "{}", listed.json());
        // The cache file of a lazy server: written and read back whole; a file whose tool is
        // not a tool is refused rather than offered.
        let catalog = Catalog { tools: vec![listed.clone()], tasks: true, ..Catalog::default() };
        let file = serde_json::to_vec(&catalog).expect("serialize");
        let read: Catalog = serde_json::from_slice(&file).expect("read back");
        assert_eq!(read, catalog);
        assert_eq!(read.tools[0].tool(), t);
        let broken = serde_json::to_vec(&json!({"tools": [{"description": "no name"}]})).expect("json");
        assert!(serde_json::from_slice::<Catalog>(&broken).is_err());
    }

    #[test]
    fn a_rebuild_shares_the_unchanged_tools_of_the_one_before() {
        let two = configs("[servers.files]\ncommand = \"x\"\n[servers.git]\ncommand = \"y\"\n");
        let files = catalog(&["read", "write"]);
        let git = catalog(&["log"]);
        let before = Registry::build(two.servers.values().zip([&files, &git]), "__");
        let mut git = git.clone();
        git.tools[0] = tool("log").with_description("changed").into();
        git.tools.push(tool("diff").into());
        let mut after = Registry::build(two.servers.values().zip([&files, &git]), "__");
        after.share_unchanged(&before);
        let shared = |name: &str| Arc::ptr_eq(&before.tools[name].tool, &after.tools[name].tool);
        assert!(shared("files__read") && shared("files__write"), "unchanged tools keep the earlier copy");
        assert!(!shared("git__log"), "a changed tool is the new one");
        assert_eq!(after.tools["git__log"].tool.description.as_deref(), Some("changed"));
        assert!(after.tools.contains_key("git__diff") && !before.tools.contains_key("git__diff"));
    }

    #[test]
    fn names_are_prefixed_and_stable_when_a_server_is_added() {
        let one = configs("[servers.files]\ncommand = \"x\"\n");
        let c = catalog(&["read", "write"]);
        let reg = Registry::build(one.servers.values().map(|s| (s, &c)), "__");
        let before: Vec<_> = reg.tools.keys().cloned().collect();
        assert_eq!(before, ["files__read", "files__write"]);
        let two = configs("[servers.files]\ncommand = \"x\"\n[servers.git]\ncommand = \"y\"\n");
        let reg = Registry::build(two.servers.values().map(|s| (s, &c)), "__");
        for name in &before {
            assert!(reg.tools.contains_key(name), "{name} changed when a server was added");
        }
        assert_eq!(reg.tools["git__read"].origin, Origin { server: "git".into(), name: "read".into() });
        let meta = reg.tools["git__read"].tool.meta.as_ref().expect("meta");
        assert_eq!(meta[UPSTREAM_META], json!({"server": "git", "name": "read"}));
    }

    #[test]
    fn include_exclude_rename_and_empty_prefix() {
        let cfg = configs(
            "[servers.db]\ncommand = \"x\"\nprefix = \"\"\ninclude = [\"query*\", \"schema\"]\nexclude = [\"query_unsafe\"]\nrename = { schema = \"describe\" }\n",
        );
        let c = catalog(&["query", "query_unsafe", "schema", "drop"]);
        let reg = Registry::build(cfg.servers.values().map(|s| (s, &c)), "__");
        assert_eq!(reg.tools.keys().collect::<Vec<_>>(), ["describe", "query"]);
        assert_eq!(reg.tools["describe"].origin.name, "schema");
    }

    #[test]
    fn illegal_names_become_legal_and_clashes_name_both() {
        let cfg = configs("[servers.a]\ncommand = \"x\"\nrename = { one = \"same\", two = \"same\" }\n");
        let c = catalog(&["x.y", "x:y", "one", "two"]);
        let reg = Registry::build(cfg.servers.values().map(|s| (s, &c)), "__");
        assert!(reg.tools.keys().all(|k| crate::names::is_legal(k)));
        assert_eq!(reg.tools.len(), 3, "{:?}", reg.tools.keys().collect::<Vec<_>>());
        assert_eq!(reg.conflicts.len(), 1);
        let text = reg.conflicts[0].to_string();
        assert!(text.contains("`one`") && text.contains("`two`") && text.contains("a__same"), "{text}");
    }

    #[test]
    fn function_calling_formats() {
        let cfg = configs("[servers.m]\ncommand = \"x\"\n");
        let mut t = tool("add");
        t.description = Some("Adds".into());
        let c = Catalog { tools: vec![t.into(), tool("bare").into()], ..Catalog::default() };
        let reg = Registry::build(cfg.servers.values().map(|s| (s, &c)), "__");
        let openai = reg.openai_tools();
        assert_eq!(openai[0]["type"], "function");
        assert_eq!(openai[0]["function"]["name"], "m__add");
        assert_eq!(openai[0]["function"]["description"], "Adds");
        assert_eq!(openai[0]["function"]["parameters"], json!({"type": "object", "additionalProperties": false}));
        assert_eq!(openai[1]["function"]["description"], "m__bare");
        let anthropic = reg.anthropic_tools();
        let schema = json!({"type": "object", "additionalProperties": false});
        assert_eq!(anthropic[0], json!({"name": "m__add", "description": "Adds", "input_schema": schema}));
    }

    #[test]
    fn shared_uris_are_scoped_and_reversible() {
        let cfg = configs("[servers.a]\ncommand = \"x\"\n[servers.b]\ncommand = \"y\"\n");
        let res = |uri: &str| Resource::new(uri, "r");
        let ca = Catalog { resources: vec![res("file:///same"), res("file:///only-a")], ..Catalog::default() };
        let cb = Catalog { resources: vec![res("file:///same")], ..Catalog::default() };
        let servers: Vec<_> = cfg.servers.values().collect();
        let reg = Registry::build([(servers[0], &ca), (servers[1], &cb)], "__");
        assert!(reg.resources.contains_key("file:///only-a"));
        assert!(reg.resources.contains_key("portico:a/file:///same"));
        assert_eq!(
            reg.resolve_uri("portico:b/file:///same"),
            Some(Origin { server: "b".into(), name: "file:///same".into() })
        );
        assert_eq!(reg.resolve_uri("file:///only-a").map(|o| o.server), Some("a".into()));
        assert_eq!(reg.resolve_uri("file:///other"), None);
    }
}
