struct Calculator;

impl Calculator {
    /// Adds.
    #[portico::tool]
    async fn add(&self, a: i64, b: i64) -> String {
        (a + b).to_string()
    }
}

fn main() {}
