/// Joins words.
#[portico::tool]
async fn join(words: Vec<&str>) -> String {
    words.join(" ")
}

fn main() {}
