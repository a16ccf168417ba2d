/// Doubles a number.
#[portico::tool]
async fn double(n: &u32) -> String {
    (n * 2).to_string()
}

fn main() {}
