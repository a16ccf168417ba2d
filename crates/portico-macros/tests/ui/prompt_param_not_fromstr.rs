struct Language;

/// Reviews code.
#[portico::prompt]
async fn review(code: String, language: Language) -> String {
    let _ = language;
    code
}

fn main() {}
