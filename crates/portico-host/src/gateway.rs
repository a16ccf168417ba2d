//! [`Gateway`]: the host's registry served as one MCP server, kept in step with it.
//!
//! The gateway is an ordinary Portico [`Server`]: every revision, both eras, stdio and
//! Streamable HTTP. Its tools, prompts, resources and templates are the registry's; each
//! handler sends its call down the host's one call path. When the registry changes, the
//! server's lists are replaced with [`Server::edit`], so a client gets one `list_changed` per
//! kind that changed, however many upstreams changed at once.

use std::collections::BTreeMap;
use std::sync::Arc;

use portico::schema::{CompleteRequestParams, ServerCapabilities};
use portico::server::{HandlerError, RequestContext, ResourceRequest, Server};
use portico::transport::http::server::StreamableHttp;
use serde_json::Value;

use crate::host::{Host, HostError};
use crate::registry::Registry;

/// The registry served as one MCP server.
#[derive(Debug, Clone)]
pub struct Gateway {
    host: Host,
    server: Server,
}

impl Gateway {
    /// A server offering `host`'s registry, following its changes until the host shuts down.
    ///
    /// Must be called within a Tokio runtime.
    pub fn new(host: Host) -> Gateway {
        let info = host.info().clone();
        let completer = host.clone();
        let server = Server::builder(info)
            .completion(move |params: CompleteRequestParams, _cx: RequestContext| {
                let host = completer.clone();
                async move { host.complete(params).await.map_err(handler_error) }
            })
            .instructions(
                "This server joins several MCP servers. Tool and prompt names are <server>__<name>; \
                 each item's _meta[\"dev.portico/upstream\"] names the server it comes from.",
            )
            .with_tools()
            .with_prompts()
            .with_resources()
            .build();
        let gateway = Gateway { host, server };
        let mut registry = gateway.host.watch_registry();
        let weak = gateway.clone();
        tokio::spawn(async move {
            let mut shown = Arc::new(Registry::default());
            loop {
                let next = registry.borrow_and_update().clone();
                weak.apply(&shown, &next);
                shown = next;
                if registry.changed().await.is_err() {
                    return;
                }
            }
        });
        gateway
    }

    /// The SDK server, to serve over any transport or mount in an axum app.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The host behind it.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// What the gateway declares.
    pub fn capabilities(&self) -> ServerCapabilities {
        self.server.capabilities()
    }

    /// Serves one client on this process's stdin and stdout until it disconnects.
    ///
    /// # Errors
    /// When stdio cannot be used.
    pub async fn serve_stdio(&self) -> Result<(), portico::Error> {
        self.server.serve(portico::transport::stdio::stdio()).await
    }

    /// A Streamable HTTP endpoint for this gateway, to configure (allowed hosts, auth) and
    /// serve or mount.
    pub fn http(&self) -> StreamableHttp {
        StreamableHttp::new(self.server.clone())
    }

    /// Replaces what changed between `old` and `new`, one `list_changed` per kind.
    fn apply(&self, old: &Registry, new: &Registry) {
        self.server.edit(|edit| {
            if old.tools != new.tools {
                edit.retain_tools(|name| new.tools.contains_key(name));
                for (name, entry) in &new.tools {
                    if old.tools.get(name) == Some(entry) {
                        continue;
                    }
                    let host = self.host.clone();
                    let exposed = Arc::<str>::from(name.as_str());
                    edit.add_tool(entry.tool.clone(), move |args: Value, cx: RequestContext| {
                        let host = host.clone();
                        let exposed = exposed.clone();
                        async move { host.call_tool(&exposed, args, Some(&cx)).await }
                    });
                }
            }
            if old.prompts != new.prompts {
                edit.retain_prompts(|name| new.prompts.contains_key(name));
                for (name, entry) in &new.prompts {
                    if old.prompts.get(name) == Some(entry) {
                        continue;
                    }
                    let host = self.host.clone();
                    let exposed = Arc::<str>::from(name.as_str());
                    edit.add_prompt(entry.prompt.clone(), move |args: BTreeMap<String, String>, cx: RequestContext| {
                        let host = host.clone();
                        let exposed = exposed.clone();
                        async move { host.get_prompt(&exposed, args, Some(&cx)).await.map_err(handler_error) }
                    });
                }
            }
            if old.resources != new.resources {
                edit.retain_resources(|uri| new.resources.contains_key(uri));
                for (uri, entry) in &new.resources {
                    if old.resources.get(uri) == Some(entry) {
                        continue;
                    }
                    let host = self.host.clone();
                    edit.add_resource(entry.resource.clone(), move |req: ResourceRequest, cx: RequestContext| {
                        let host = host.clone();
                        async move { host.read_resource(req.uri(), None, Some(&cx)).await.map_err(handler_error) }
                    });
                }
            }
            if old.templates != new.templates {
                edit.retain_resource_templates(|t| new.templates.contains_key(t));
                for (template, entry) in &new.templates {
                    if old.templates.get(template) == Some(entry) {
                        continue;
                    }
                    let host = self.host.clone();
                    let server = Arc::<str>::from(entry.origin.server.as_str());
                    let added = edit.add_resource_template(entry.template.clone(), move |req: ResourceRequest, cx: RequestContext| {
                        let host = host.clone();
                        let server = server.clone();
                        async move {
                            let uri = req.uri().strip_prefix(&format!("portico:{server}/")).unwrap_or(req.uri()).to_owned();
                            host.read_resource(&uri, Some(&server), Some(&cx)).await.map_err(handler_error)
                        }
                    });
                    if let Err(e) = added {
                        tracing::warn!(target: "portico::gateway", server = %entry.origin.server, "template `{template}` left out: {e}");
                    }
                }
            }
        });
    }
}

fn handler_error(e: HostError) -> HandlerError {
    match e {
        HostError::NotFound { what: "resource", name } => HandlerError::resource_not_found(name),
        HostError::NotFound { .. } => HandlerError::invalid_params(e.to_string()),
        HostError::Upstream(crate::upstream::UpstreamError::Refused { code, message, .. }) => {
            HandlerError::wire(portico::schema::ErrorObject::new(portico::schema::ErrorCode(code), message))
        }
        other => HandlerError::internal(other.to_string()),
    }
}
