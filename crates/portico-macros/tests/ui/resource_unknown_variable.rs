/// A user's profile.
#[portico::resource("users://{id}/profile")]
async fn profile(user_id: u64) -> String {
    user_id.to_string()
}

fn main() {}
