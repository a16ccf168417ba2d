/// A number.
#[portico::resource("numbers://{n}")]
async fn number(n: u64) -> u64 {
    n
}

fn main() {}
