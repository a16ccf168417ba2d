struct Prompts;

#[portico::tools]
impl Prompts {
    /// Reviews code.
    #[prompt]
    async fn review(&self, code: String) -> String {
        code
    }

    #[completion(prompt = "review", arg = "language")]
    async fn languages(&self, value: String) -> Vec<String> {
        vec![value]
    }
}

fn main() {}
