struct Sum {
    sum: i64,
}

/// Adds.
#[portico::tool(structured)]
async fn add(a: i64, b: i64) -> Sum {
    Sum { sum: a + b }
}

fn main() {}
