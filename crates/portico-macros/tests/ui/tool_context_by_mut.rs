use portico::server::RequestContext;

/// Reports.
#[portico::tool]
async fn report(cx: &mut RequestContext) -> String {
    format!("{cx:?}")
}

fn main() {}
