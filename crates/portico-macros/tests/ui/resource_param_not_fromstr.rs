#[derive(Debug)]
struct UserId(u64);

/// A user's profile.
#[portico::resource("users://{id}/profile")]
async fn profile(id: UserId) -> String {
    format!("{id:?}")
}

fn main() {}
