//! A typed MCP server written with the attribute macros, over stdio.
//!
//! Run it with `cargo run -p portico-mcp --example macros --features macros`.
use portico::schema::Implementation;
use portico::server::{Json, RequestContext, Server};
use schemars::JsonSchema;
use serde::Serialize;

struct Calculator;

#[derive(Serialize, JsonSchema)]
struct Quotient {
    value: f64,
}

#[portico::tools]
impl Calculator {
    /// Adds two integers.
    #[tool]
    async fn add(&self, a: i64, b: i64) -> String {
        (a + b).to_string()
    }

    /// Divides `a` by `b`.
    #[tool(read_only)]
    async fn divide(
        &self,
        a: f64,
        /** The divisor; not zero. */
        b: f64,
    ) -> Result<Json<Quotient>, String> {
        if b == 0.0 { Err("division by zero".into()) } else { Ok(Json(Quotient { value: a / b })) }
    }

    /// Counts down from `n`, reporting progress.
    #[tool]
    async fn countdown(&self, #[arg(default = 3)] n: u32, cx: &RequestContext) -> String {
        for i in 0..n {
            cx.progress(f64::from(i + 1), Some(f64::from(n)), None).await.ok();
        }
        "liftoff".into()
    }
}

/// Greets someone by name.
#[portico::tool]
async fn greet(
    /** Who to greet. */
    name: String,
) -> String {
    format!("Hello, {name}!")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), portico::Error> {
    let builder = Server::builder(Implementation::new("calculator", env!("CARGO_PKG_VERSION"))).toolbox(Calculator);
    greet::register(builder).build().serve(portico::transport::stdio::stdio()).await
}
