//! Expansions compile without a warning in a crate that denies them, public or not.
#![deny(warnings, missing_docs, missing_debug_implementations, unused, unreachable_pub, clippy::all)]

use portico::schema::{CompleteRequestParams, Implementation};
use portico::server::{Json, RequestContext, ResourceRequest, Server};

/// A server.
#[derive(Debug)]
pub struct Service;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Point {
    x: i32,
}

#[portico::tools]
impl Point {
    /// `Self` in parameter and result types means `Point`.
    #[tool]
    fn shift(&self, by: Self, #[arg(default = Self { x: 1 })] scale: Self) -> Json<Self> {
        Json(Point { x: self.x + by.x * scale.x })
    }

    /// A default from an associated function.
    #[tool]
    fn reset(&self, #[arg(default = Self::origin())] to: Point) -> Json<Point> {
        Json(to)
    }
}

impl Point {
    fn origin() -> Self {
        Point { x: 0 }
    }
}

#[portico::tools]
impl Service {
    /// A tool without arguments.
    #[tool]
    async fn nothing(&self) -> String {
        String::new()
    }

    /// A tool using only the context.
    #[tool]
    fn context(cx: RequestContext) -> String {
        format!("{}", cx.protocol_version())
    }

    /// Structured.
    #[tool(structured, destructive = false)]
    async fn point(self: std::sync::Arc<Self>, x: i32) -> Result<Point, std::io::Error> {
        Ok(Point { x })
    }

    /// A static resource.
    #[resource("a://b")]
    fn resource(_request: ResourceRequest) -> Json<Vec<u8>> {
        Json(vec![1])
    }

    /// A prompt without arguments.
    #[prompt]
    fn empty() -> &'static str {
        "hello"
    }

    #[completion(resource = "a://{x}", arg = "x")]
    fn complete(_: &RequestContext, _params: CompleteRequestParams) -> Vec<String> {
        Vec::new()
    }
}

/// A public free tool.
#[portico::tool]
pub async fn public(
    /// Doc.
    r#type: String,
) -> String {
    r#type
}

/// A private free resource template.
#[portico::resource("x://{+path}{?q}")]
async fn template(path: String, #[arg(name = "q")] query: Option<u8>) -> String {
    format!("{path}{query:?}")
}

/// A prompt.
#[portico::prompt]
async fn prompt(#[arg(default)] depth: u8, #[arg(default = "x")] name: &str) -> String {
    format!("{depth}{name}")
}

fn main() {
    let builder = Server::builder(Implementation::new("x", "1")).toolbox(Service).toolbox(Point { x: 0 });
    let builder = template::register(prompt::register(public::register(builder)));
    let _ = builder.build();
    let _ = (public::tool(), template::resource_template(), prompt::prompt());
}
