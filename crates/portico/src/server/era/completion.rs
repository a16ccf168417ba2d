//! `completion/complete`: only for a prompt or resource template of this server.

use std::sync::Arc;

use portico_schema::{CompleteRequestParams, CompletionReference, ErrorObject};

use super::dispatch::{Call, Step, wait};
use super::{EraLayer, parse};

impl EraLayer {
    pub(super) fn complete(self: &Arc<Self>, call: Call) -> Result<Step, ErrorObject> {
        let Call { req, era, peer, .. } = call;
        let p: CompleteRequestParams = parse(req.params.as_deref())?;
        self.check_completion_ref(&p.r#ref)?;
        let handler =
            self.server.registry().completion.clone().ok_or_else(|| ErrorObject::method_not_found(&req.method))?;
        let cx = self.context(&req, &era, peer, None, req.cancel.clone());
        let version = era.version;
        let fut = handler(p, cx);
        let this = self.clone();
        wait(async move {
            let r = fut.await.map_err(|e| e.into_error_object(version))?;
            this.finish(r, &era)
        })
    }

    fn check_completion_ref(&self, r: &CompletionReference) -> Result<(), ErrorObject> {
        let reg = self.server.registry();
        let known = match r {
            CompletionReference::Prompt(p) => reg.prompts.contains_key(&p.name),
            CompletionReference::ResourceTemplate(t) => {
                reg.templates.contains_key(&t.uri) || reg.resources.contains_key(&t.uri)
            }
            _ => false,
        };
        if known {
            Ok(())
        } else {
            Err(ErrorObject::invalid_params("completion reference names no prompt or resource template of this server"))
        }
    }
}
