/// A user's profile.
#[portico::resource("users://{id/profile")]
async fn profile(id: u64) -> String {
    id.to_string()
}

fn main() {}
