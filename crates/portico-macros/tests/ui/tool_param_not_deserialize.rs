struct Point {
    x: f64,
    y: f64,
}

/// Says where a point is.
#[portico::tool]
async fn locate(at: Point) -> String {
    format!("{} {}", at.x, at.y)
}

fn main() {}
