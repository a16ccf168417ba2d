//! The one call path: every tool call, resource read and prompt through the host passes
//! oversight (policy, then approval), goes to its upstream, is checked, and ends in
//! `Host::after` (metrics, the span, and the activity log).

use std::collections::BTreeMap;
use std::sync::Arc;

use portico::RelayedToolResult;
use portico::schema::{
    CompleteRequestParams, CompleteResult, CompletionReference, GetPromptResult, ReadResourceResult,
};
use portico::server::RequestContext;
use serde_json::Value;
use tracing::Instrument;

use super::unended::Unended;
use super::{Host, HostError, principal, tool_error};
use crate::registry::Origin;
use crate::router::{Answer, Call, Method, Outcome, Review, Verdict};
use crate::upstream::UpstreamError;

impl Host {
    pub(crate) async fn call_tool_in(
        &self,
        name: &str,
        arguments: Value,
        cx: Option<&RequestContext>,
        by: Option<&str>,
    ) -> Result<RelayedToolResult, HostError> {
        let registry = self.registry();
        let Some(entry) = registry.tools.get(name) else {
            return Ok(tool_error(format!("no tool `{name}` is offered")).into());
        };
        let origin = &entry.origin;
        let call = Call {
            method: Method::CallTool,
            exposed: name,
            origin,
            tool: Some(&entry.tool),
            arguments: &arguments,
            principal: by.unwrap_or_else(|| principal(cx)),
            request: cx,
            started: std::time::SystemTime::now(),
            others_in_flight: self.inner.activity.count(),
        };
        if !self.inner.switches.is_on_for(name, cx.map(|cx| cx.connection_id().get())) {
            // Refused, and recorded like any refusal.
            let reason = format!("the tool `{name}` is switched off on this gateway");
            self.after(&call, &Verdict::deny(reason.clone()), &Outcome::Refused(&reason)).await;
            return Ok(tool_error(reason).into());
        }
        if self.inner.activity.is_draining() {
            // Refused, and recorded like any refusal: the gateway is stopping.
            let reason = "the gateway is shutting down".to_owned();
            self.after(&call, &Verdict::deny(reason.clone()), &Outcome::Refused(&reason)).await;
            return Ok(tool_error(reason).into());
        }
        let tracked = self.inner.activity.begin(&call);
        // Dropped before the record below (the client cancelled, or went away), it records.
        let unended = Unended::new(self, &call);
        // The large steps are boxed: their futures (policy and approval, the upstream call, the
        // activity log) would otherwise be laid out inside this one, which the gateway's
        // handler moves (copies) whole at each poll boundary it crosses.
        let verdict = unended.decided(match tracked.unless_cancelled(self.inner.oversight.before(&call)).await {
            Some(verdict) => verdict,
            None => Verdict::deny(format!("the call was cancelled by a person (server `{}`)", origin.server)),
        });
        if let Some(reason) = &verdict.refusal {
            unended.ended();
            self.after(&call, verdict, &Outcome::Refused(reason)).await;
            return Ok(tool_error(format!("refused: {reason}")).into());
        }
        let Some(up) = self.upstream(&origin.server) else {
            let reason = format!("server `{}` is not configured any more", origin.server);
            unended.ended();
            self.after(&call, verdict, &Outcome::Failed(&reason)).await;
            return Ok(tool_error(reason).into());
        };
        tracked.running();
        let sent = std::time::Instant::now();
        let upstream =
            Box::pin(up.call_tool_observed(&origin.name, arguments.clone(), cx, Some(Arc::new(tracked.on_progress()))));
        let upstream = tracked
            .unless_cancelled(upstream)
            .await
            .unwrap_or_else(|| Err(UpstreamError::Cancelled { server: origin.server.clone() }));
        self.measured(&call, sent, &upstream);
        match upstream {
            Ok(result) => {
                // Every change goes through `result_mut`, which drops the upstream's JSON: the
                // gateway answers with it only while it says what oversight saw.
                let mut result = result;
                if crate::checks::blocks_to_expose(&registry, &origin.server, &result.result().content) {
                    crate::checks::expose_blocks(&registry, &origin.server, &mut result.result_mut().content);
                }
                let mut result = match self.inner.output_schemas.check(&entry.tool, result.result()) {
                    None => result,
                    Some(why) => {
                        tool_error(format!("server `{}` returned a result that was withheld: {why}", origin.server))
                            .into()
                    }
                };
                if verdict.review_result
                    && let Review::Withhold(why) =
                        Box::pin(self.inner.oversight.review(&call, verdict, Answer::Tool(result.result()))).await
                {
                    result = tool_error(format!("the result was withheld by the person reviewing it: {why}")).into();
                }
                unended.ended();
                self.after(&call, verdict, &Outcome::Answered(Answer::Tool(result.result()))).await;
                Ok(result)
            }
            Err(e) => {
                let text = e.to_string();
                unended.ended();
                self.after(&call, verdict, &Outcome::Failed(&text)).await;
                match e {
                    refused @ UpstreamError::Refused { .. } => Err(HostError::Upstream(refused)),
                    other => Ok(tool_error(other.to_string()).into()),
                }
            }
        }
    }

    /// Reads the exposed resource `uri` through the call path.
    ///
    /// # Errors
    /// Not offered, refused, or the upstream failed.
    pub async fn read_resource(
        &self,
        uri: &str,
        from: Option<&str>,
        cx: Option<&RequestContext>,
    ) -> Result<ReadResourceResult, HostError> {
        let span = crate::telemetry::span(Method::ReadResource, uri, cx);
        self.read_resource_in(uri, from, cx).instrument(span).await
    }

    pub(crate) async fn read_resource_in(
        &self,
        uri: &str,
        from: Option<&str>,
        cx: Option<&RequestContext>,
    ) -> Result<ReadResourceResult, HostError> {
        let registry = self.registry();
        let origin = match registry.resolve_uri(uri) {
            Some(origin) => origin,
            None => match from {
                Some(server) => Origin { server: server.to_owned(), name: uri.to_owned() },
                None => return Err(HostError::NotFound { what: "resource", name: uri.to_owned() }),
            },
        };
        let call = Call {
            method: Method::ReadResource,
            exposed: uri,
            origin: &origin,
            tool: None,
            arguments: &Value::Null,
            principal: principal(cx),
            request: cx,
            started: std::time::SystemTime::now(),
            others_in_flight: self.inner.activity.count(),
        };
        let unended = Unended::new(self, &call);
        let verdict = self.pass(&call, &unended).await?;
        let Some(up) = self.upstream(&origin.server) else {
            unended.ended();
            let reason = format!("server `{}` is not configured any more", origin.server);
            self.after(&call, verdict, &Outcome::Failed(&reason)).await;
            return Err(HostError::NotFound { what: "resource", name: uri.to_owned() });
        };
        let sent = std::time::Instant::now();
        let mut result = up.read_resource(&origin.name, cx).await;
        self.measured(&call, sent, &result);
        if let Ok(r) = &mut result {
            crate::checks::expose_contents(&registry, &origin.server, &mut r.contents);
        }
        self.finish(&call, verdict, result.as_ref().map(Answer::Resource), &unended).await?;
        Ok(result?)
    }

    /// Gets the exposed prompt `name` through the call path.
    ///
    /// # Errors
    /// Not offered, refused, or the upstream failed.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
        cx: Option<&RequestContext>,
    ) -> Result<GetPromptResult, HostError> {
        let span = crate::telemetry::span(Method::GetPrompt, name, cx);
        self.get_prompt_in(name, arguments, cx).instrument(span).await
    }

    pub(crate) async fn get_prompt_in(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
        cx: Option<&RequestContext>,
    ) -> Result<GetPromptResult, HostError> {
        let registry = self.registry();
        let entry =
            registry.prompts.get(name).ok_or_else(|| HostError::NotFound { what: "prompt", name: name.to_owned() })?;
        let args_json = serde_json::to_value(&arguments).unwrap_or(Value::Null);
        let call = Call {
            method: Method::GetPrompt,
            exposed: name,
            origin: &entry.origin,
            tool: None,
            arguments: &args_json,
            principal: principal(cx),
            request: cx,
            started: std::time::SystemTime::now(),
            others_in_flight: self.inner.activity.count(),
        };
        let unended = Unended::new(self, &call);
        let verdict = self.pass(&call, &unended).await?;
        let Some(up) = self.upstream(&entry.origin.server) else {
            unended.ended();
            let reason = format!("server `{}` is not configured any more", entry.origin.server);
            self.after(&call, verdict, &Outcome::Failed(&reason)).await;
            return Err(HostError::NotFound { what: "prompt", name: name.to_owned() });
        };
        let sent = std::time::Instant::now();
        let mut result = up.get_prompt(&entry.origin.name, arguments, cx).await;
        self.measured(&call, sent, &result);
        if let Ok(r) = &mut result {
            for m in &mut r.messages {
                crate::checks::expose_blocks(&registry, &entry.origin.server, std::slice::from_mut(&mut m.content));
            }
        }
        self.finish(&call, verdict, result.as_ref().map(Answer::Prompt), &unended).await?;
        Ok(result?)
    }

    /// Completes an argument of an exposed prompt or resource template at its upstream (no
    /// oversight: completion reads no data of the upstream's beyond suggestions).
    ///
    /// # Errors
    /// Not offered, or the upstream failed.
    pub async fn complete(&self, mut params: CompleteRequestParams) -> Result<CompleteResult, HostError> {
        let registry = self.registry();
        let origin = match &mut params.r#ref {
            CompletionReference::Prompt(p) => {
                let entry = registry
                    .prompts
                    .get(&p.name)
                    .ok_or_else(|| HostError::NotFound { what: "prompt", name: p.name.clone() })?;
                p.name.clone_from(&entry.origin.name);
                entry.origin.clone()
            }
            CompletionReference::ResourceTemplate(t) => {
                let entry = registry
                    .templates
                    .get(&t.uri)
                    .ok_or_else(|| HostError::NotFound { what: "resource template", name: t.uri.clone() })?;
                t.uri.clone_from(&entry.origin.name);
                entry.origin.clone()
            }
            #[allow(unreachable_patterns)]
            _ => return Err(HostError::NotFound { what: "completion reference", name: String::new() }),
        };
        // The caller's own `_meta` members go on; the protocol's keys are this hop's.
        params.meta = params.meta.take().and_then(|m| {
            let mut kept = portico::schema::RequestMeta::new();
            kept.other = m.other.into_iter().filter(|(k, _)| !k.starts_with("io.modelcontextprotocol/")).collect();
            (!kept.is_empty()).then_some(kept)
        });
        let up = self
            .upstream(&origin.server)
            .ok_or_else(|| HostError::NotFound { what: "server", name: origin.server.clone() })?;
        Ok(up.complete(params).await?)
    }

    /// The end of every call: measured, then seen by oversight (the activity log).
    pub(crate) async fn after(&self, call: &Call<'_>, verdict: &Verdict, outcome: &Outcome<'_>) {
        self.inner.metrics.call(call, outcome);
        crate::telemetry::ended(&tracing::Span::current(), outcome);
        Box::pin(self.inner.oversight.after(call, verdict, outcome)).await;
    }

    /// The upstream's part of a call, measured.
    pub(crate) fn measured<T>(&self, call: &Call<'_>, sent: std::time::Instant, result: &Result<T, UpstreamError>) {
        let error = match result {
            Ok(_) => None,
            Err(UpstreamError::Timeout { .. }) => Some("timeout"),
            Err(UpstreamError::Refused { code, .. }) => {
                crate::telemetry::refused_with(*code);
                Some("jsonrpc_error")
            }
            Err(_) => Some("upstream_error"),
        };
        self.inner.metrics.upstream(call.method, &call.origin.server, sent.elapsed(), error);
    }

    /// Policy and approval for a read or a prompt; a refusal is recorded.
    pub(crate) async fn pass<'u>(&self, call: &Call<'_>, unended: &'u Unended<'_>) -> Result<&'u Verdict, HostError> {
        let verdict = unended.decided(self.inner.oversight.before(call).await);
        match &verdict.refusal {
            None => Ok(verdict),
            Some(reason) => {
                unended.ended();
                self.after(call, verdict, &Outcome::Refused(reason)).await;
                Err(HostError::Refused(reason.clone()))
            }
        }
    }

    /// Reviews (when asked) and records a read's or a prompt's answer; a withheld one becomes
    /// an error.
    pub(crate) async fn finish(
        &self,
        call: &Call<'_>,
        verdict: &Verdict,
        result: Result<Answer<'_>, &UpstreamError>,
        unended: &Unended<'_>,
    ) -> Result<(), HostError> {
        match result {
            Ok(answer) => {
                if verdict.review_result
                    && let Review::Withhold(why) = self.inner.oversight.review(call, verdict, answer).await
                {
                    let reason = format!("the result was withheld by the person reviewing it: {why}");
                    unended.ended();
                    self.after(call, verdict, &Outcome::Refused(&reason)).await;
                    return Err(HostError::Refused(reason));
                }
                unended.ended();
                self.after(call, verdict, &Outcome::Answered(answer)).await;
                Ok(())
            }
            Err(e) => {
                unended.ended();
                self.after(call, verdict, &Outcome::Failed(&e.to_string())).await;
                Ok(())
            }
        }
    }
}
