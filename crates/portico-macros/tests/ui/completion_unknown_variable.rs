#[portico::completion(resource = "users://{id}/profile", arg = "name")]
async fn names(value: String) -> Vec<String> {
    vec![value]
}

fn main() {}
