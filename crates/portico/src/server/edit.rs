//! [`Edit`]: many changes to a server's tools, resources and prompts applied at once, with one
//! `list_changed` per kind that changed.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use portico_schema::{Prompt, Resource, ResourceTemplate, Tool};

use super::registry::{PromptHandler, Registry, ResourceHandler, ToolHandler};
use super::uri_template::UriTemplateError;
use super::{Event, Server, TaskSupport};

/// A batch of changes to a [`Server`]'s tools, resources, resource templates and prompts, made
/// with [`Server::edit`].
///
/// Connected clients see the batch whole: the registry is locked for the edit, and when it
/// ends each kind that changed (tools, resources and templates, prompts) is announced with a
/// single `list_changed`. A gateway that mirrors an upstream's list replaces it this way
/// instead of sending one notification per tool.
pub struct Edit<'a> {
    registry: &'a mut Registry,
    tools: bool,
    resources: bool,
    prompts: bool,
    tasks: bool,
}

impl std::fmt::Debug for Edit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edit")
            .field("tools_changed", &self.tools)
            .field("resources_changed", &self.resources)
            .field("prompts_changed", &self.prompts)
            .finish_non_exhaustive()
    }
}

impl Edit<'_> {
    /// Adds or replaces a tool. An `Arc<Tool>` is kept as it is, shared with its giver.
    pub fn add_tool<M>(&mut self, tool: impl Into<Arc<Tool>>, handler: impl ToolHandler<M>) -> &mut Self {
        self.add_task_tool(tool, TaskSupport::Forbidden, handler)
    }

    /// Adds or replaces a tool that may run as a task (see [`super::ServerBuilder::task_tool`]).
    pub fn add_task_tool<M>(
        &mut self,
        tool: impl Into<Arc<Tool>>,
        tasks: TaskSupport,
        handler: impl ToolHandler<M>,
    ) -> &mut Self {
        self.registry.insert_tool(tool.into(), handler.into_erased(), tasks);
        self.tasks |= tasks != TaskSupport::Forbidden;
        self.tools = true;
        self
    }

    /// Removes a tool; `false` when there was none of that name.
    pub fn remove_tool(&mut self, name: &str) -> bool {
        let removed = self.registry.tools.remove(name).is_some();
        self.tools |= removed;
        removed
    }

    /// Removes every tool for which `keep` returns `false`, given its name.
    pub fn retain_tools(&mut self, mut keep: impl FnMut(&str) -> bool) -> &mut Self {
        let before = self.registry.tools.len();
        self.registry.tools.retain(|name, _| keep(name));
        self.tools |= self.registry.tools.len() != before;
        self
    }

    /// Announces `tools/list_changed` when the edit ends even if no tool changed: a gateway
    /// passes on an upstream's notification this way.
    pub fn mark_tools_changed(&mut self) -> &mut Self {
        self.tools = true;
        self
    }

    /// Announces `prompts/list_changed` when the edit ends even if no prompt changed.
    pub fn mark_prompts_changed(&mut self) -> &mut Self {
        self.prompts = true;
        self
    }

    /// Announces `resources/list_changed` when the edit ends even if no resource changed.
    pub fn mark_resources_changed(&mut self) -> &mut Self {
        self.resources = true;
        self
    }

    /// The names of the tools there are now, in order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.registry.tools.keys().map(String::as_str)
    }

    /// Adds or replaces a resource.
    pub fn add_resource(&mut self, resource: Resource, handler: impl ResourceHandler) -> &mut Self {
        self.registry.insert_resource(resource, handler.into_erased());
        self.resources = true;
        self
    }

    /// Removes a resource by URI; `false` when there was none.
    pub fn remove_resource(&mut self, uri: &str) -> bool {
        let removed = self.registry.resources.remove(uri).is_some();
        self.resources |= removed;
        removed
    }

    /// Removes every resource for which `keep` returns `false`, given its URI.
    pub fn retain_resources(&mut self, mut keep: impl FnMut(&str) -> bool) -> &mut Self {
        let before = self.registry.resources.len();
        self.registry.resources.retain(|uri, _| keep(uri));
        self.resources |= self.registry.resources.len() != before;
        self
    }

    /// Adds or replaces a resource template.
    ///
    /// # Errors
    /// When the template is not a valid RFC 6570 URI template; nothing is changed then.
    pub fn add_resource_template(
        &mut self,
        template: ResourceTemplate,
        handler: impl ResourceHandler,
    ) -> Result<&mut Self, UriTemplateError> {
        self.registry.insert_template(template, handler.into_erased())?;
        self.resources = true;
        Ok(self)
    }

    /// Removes every resource template for which `keep` returns `false`, given its template.
    pub fn retain_resource_templates(&mut self, mut keep: impl FnMut(&str) -> bool) -> &mut Self {
        let before = self.registry.templates.len();
        self.registry.templates.retain(|template, _| keep(template));
        self.resources |= self.registry.templates.len() != before;
        self
    }

    /// Adds or replaces a prompt.
    pub fn add_prompt<M>(&mut self, prompt: Prompt, handler: impl PromptHandler<M>) -> &mut Self {
        self.registry.insert_prompt(prompt, handler.into_erased());
        self.prompts = true;
        self
    }

    /// Removes a prompt; `false` when there was none of that name.
    pub fn remove_prompt(&mut self, name: &str) -> bool {
        let removed = self.registry.prompts.remove(name).is_some();
        self.prompts |= removed;
        removed
    }

    /// Removes every prompt for which `keep` returns `false`, given its name.
    pub fn retain_prompts(&mut self, mut keep: impl FnMut(&str) -> bool) -> &mut Self {
        let before = self.registry.prompts.len();
        self.registry.prompts.retain(|name, _| keep(name));
        self.prompts |= self.registry.prompts.len() != before;
        self
    }
}

impl Server {
    /// Applies many changes at once; each kind that changed is announced to connected clients
    /// with one `list_changed` when `f` returns. Adding a tool, resource or prompt switches its
    /// capability on for later handshakes, as `add_*` does.
    ///
    /// The registry is locked while `f` runs: `f` must not call back into this server.
    ///
    /// ```
    /// # use portico::schema::{Implementation, Tool, object};
    /// # use portico::server::Server;
    /// let server = Server::builder(Implementation::new("gateway", "1.0.0")).with_tools().build();
    /// server.edit(|edit| {
    ///     edit.retain_tools(|_| false);
    ///     for name in ["a", "b", "c"] {
    ///         let tool = Tool::new(name, object(serde_json::json!({"type": "object"})));
    ///         edit.add_tool(tool, |_: serde_json::Value| async { "ok" });
    ///     }
    /// });
    /// ```
    pub fn edit<R>(&self, f: impl FnOnce(&mut Edit<'_>) -> R) -> R {
        let (result, tools, resources, prompts, tasks) = {
            let mut registry = crate::sync::write_lock(&self.inner.registry);
            let mut edit =
                Edit { registry: &mut registry, tools: false, resources: false, prompts: false, tasks: false };
            let result = f(&mut edit);
            (result, edit.tools, edit.resources, edit.prompts, edit.tasks)
        };
        let offers = &self.inner.offers;
        if tools {
            offers.tools.store(true, Ordering::Relaxed);
            self.tools_changed();
        }
        if tasks {
            offers.tasks.store(true, Ordering::Relaxed);
        }
        if resources {
            offers.resources.store(true, Ordering::Relaxed);
            self.emit(Event::ResourcesChanged);
        }
        if prompts {
            offers.prompts.store(true, Ordering::Relaxed);
            self.emit(Event::PromptsChanged);
        }
        result
    }
}
