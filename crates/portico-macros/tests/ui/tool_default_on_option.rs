/// Lists things.
#[portico::tool]
async fn list(#[arg(default = 10)] limit: Option<u32>) -> String {
    format!("{limit:?}")
}

fn main() {}
