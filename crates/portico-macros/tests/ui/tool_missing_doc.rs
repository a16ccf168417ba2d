#[portico::tool]
async fn undocumented(x: u32) -> String {
    x.to_string()
}

fn main() {}
