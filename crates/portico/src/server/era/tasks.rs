//! The tasks extension's methods: `tasks/get`, `tasks/update`, `tasks/cancel`.

use portico_schema::{EmptyResult, ErrorObject, methods};

use super::dispatch::{Call, Step};
use super::{Era, EraLayer, parse};
use crate::rpc::{IncomingRequest, Reply};
use crate::server::tasks;

impl EraLayer {
    /// `tasks/get`, `tasks/update`, `tasks/cancel`: only for requests that declare the tasks
    /// extension (`-32021` otherwise), and only for tasks that exist (`-32602` otherwise).
    pub(super) fn task_method(&self, call: Call) -> Result<Step, ErrorObject> {
        self.task(&call.req, &call.era).map(Step::Now)
    }

    fn task(&self, req: &IncomingRequest, era: &Era) -> Reply {
        if !tasks::declared(&era.caps) {
            return Err(ErrorObject::missing_client_capability(tasks::required_capabilities()));
        }
        let params = req.params.as_deref();
        let store = self.server.tasks();
        match &*req.method {
            methods::TASKS_GET => {
                let p: tasks::TaskIdParams = parse(params)?;
                self.finish(store.get(&p.task_id)?.detailed(), era)
            }
            methods::TASKS_UPDATE => {
                let p: tasks::UpdateParams = parse(params)?;
                store.get(&p.task_id)?.update(p.input_responses.unwrap_or_default())?;
                self.finish(EmptyResult::new(), era)
            }
            _ => {
                let p: tasks::TaskIdParams = parse(params)?;
                store.get(&p.task_id)?.request_cancel();
                self.finish(EmptyResult::new(), era)
            }
        }
    }
}
