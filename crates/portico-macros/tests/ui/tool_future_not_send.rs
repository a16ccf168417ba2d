use std::rc::Rc;

/// Counts.
#[portico::tool]
async fn count(n: u32) -> String {
    let shared = Rc::new(n);
    tokio::task::yield_now().await;
    shared.to_string()
}

fn main() {
    let _ = count::register(portico::server::Server::builder(portico::schema::Implementation::new("x", "1")));
}
