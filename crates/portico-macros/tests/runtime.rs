//! A server written with the macros, driven by Portico's client over the in-memory transport in
//! both eras: what is listed (names, descriptions, schemas), what calls return, and how errors
//! surface.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use portico::client::{Client, EraMode};
use portico::schema::{
    CallToolResult, CompleteArgument, CompleteRequestParams, CompletionReference, ContentBlock, ErrorCode,
    Implementation, ProtocolVersion, ResourceContents, Tool,
};
use portico::server::{HandlerError, Json, RequestContext, ResourceRequest, Server, ToolBox, input_schema};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const MODES: [EraMode; 2] = [EraMode::Handshake(ProtocolVersion::V2025_11_25), EraMode::Stateless];

struct Library {
    books: Vec<Book>,
}

#[derive(Clone, Serialize, JsonSchema)]
struct Book {
    title: String,
    year: u16,
}

/// Books found.
#[derive(Serialize, JsonSchema)]
struct Found {
    books: Vec<Book>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Order {
    Oldest,
    Newest,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

#[derive(Serialize, JsonSchema)]
struct Quotient {
    value: f64,
}

#[derive(Serialize)]
struct Profile {
    id: u64,
    name: String,
}

#[portico::tools]
impl Library {
    /// Finds books whose title contains `query`.
    #[tool(read_only, open_world = false, title = "Search books")]
    async fn search(
        &self,
        /// Text to look for in titles.
        query: String,
        /// How many books at most.
        #[arg(default = 10)]
        limit: u32,
        /// Only books published in or after this year.
        since: Option<u16>,
        order: Option<Order>,
    ) -> Json<Found> {
        let mut books: Vec<Book> = self
            .books
            .iter()
            .filter(|b| b.title.contains(&query) && since.is_none_or(|s| b.year >= s))
            .cloned()
            .collect();
        if let Some(Order::Newest) = order {
            books.reverse();
        }
        books.truncate(limit as usize);
        Json(Found { books })
    }

    /// Adds two integers.
    #[tool(structured)]
    async fn add(&self, a: i64, b: i64) -> Sum {
        Sum { sum: a + b }
    }

    /// Divides `a` by `b`.
    #[tool(structured, idempotent)]
    fn divide(a: f64, b: f64) -> Result<Quotient, String> {
        if b == 0.0 { Err("division by zero".into()) } else { Ok(Quotient { value: a / b }) }
    }

    /// Repeats the text.
    #[tool(name = "echo_text")]
    async fn echo(self: Arc<Self>, text: &str, prefix: Option<&str>) -> String {
        format!("{}{text}", prefix.unwrap_or(""))
    }

    /// The revision the request speaks.
    #[tool]
    async fn whoami(&self, cx: &RequestContext) -> String {
        cx.protocol_version().to_string()
    }

    #[tool(no_description)]
    async fn ping(&self) -> &'static str {
        "pong"
    }

    /// Always fails with the reason given.
    #[tool]
    async fn fail(
        &self,
        #[serde(rename = "why")] reason: String,
        /// Shout it.
        #[serde(default)]
        loud: bool,
    ) -> Result<String, String> {
        Err(if loud { reason.to_uppercase() } else { reason })
    }

    /// A user's profile.
    #[resource("users://{id}/profile", name = "profile", mime_type = "application/json")]
    async fn profile(&self, id: u64, request: &ResourceRequest) -> Result<Json<Profile>, HandlerError> {
        if id == 0 {
            return Err(HandlerError::resource_not_found(request.uri()));
        }
        Ok(Json(Profile { id, name: format!("user {id}") }))
    }

    /// The message of the day.
    #[resource("library://motd", title = "Message of the day")]
    fn motd() -> &'static str {
        "Read something old."
    }

    /// A book by position, with an optional format.
    #[resource("library://books/{index}{?format}")]
    async fn book(&self, index: usize, format: Option<String>) -> Result<String, HandlerError> {
        let book = self.books.get(index).ok_or_else(|| HandlerError::invalid_params("no such book"))?;
        Ok(match format.as_deref() {
            Some("json") => serde_json::to_string(book).map_err(|e| HandlerError::internal(e.to_string()))?,
            _ => format!("{} ({})", book.title, book.year),
        })
    }

    /// Asks for a code review.
    #[prompt(title = "Code review")]
    async fn review(
        &self,
        /// The code to review.
        code: String,
        /// Its language.
        language: Option<String>,
        /// How thorough, 1 to 5.
        #[arg(default = 3)]
        depth: u8,
    ) -> String {
        format!("Review this {} code at depth {depth}:\n{code}", language.as_deref().unwrap_or("unknown"))
    }

    #[completion(prompt = "review", arg = "language")]
    async fn languages(&self, prefix: &str) -> Vec<&'static str> {
        ["rust", "ruby", "python"].into_iter().filter(|l| l.starts_with(prefix)).collect()
    }

    #[completion(resource = "users://{id}/profile", arg = "id")]
    fn user_ids(value: String, params: &CompleteRequestParams) -> Vec<String> {
        let mut ids: Vec<String> =
            ["1", "12", "123"].into_iter().filter(|i| i.starts_with(&value)).map(String::from).collect();
        if params.context.is_some() {
            ids.push("context".into());
        }
        ids
    }
}

/// Greets someone.
#[portico::tool]
async fn greet(
    /// Who to greet.
    name: String,
    cx: RequestContext,
) -> String {
    cx.log(portico::schema::LoggingLevel::Debug, None, "greeting").await.ok();
    format!("Hello, {name}!")
}

/// Counts how often its schema is generated.
static COUNTED_SCHEMAS: AtomicUsize = AtomicUsize::new(0);

#[derive(Deserialize)]
#[serde(transparent)]
struct Counted(u32);

impl JsonSchema for Counted {
    fn schema_name() -> Cow<'static, str> {
        "Counted".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        COUNTED_SCHEMAS.fetch_add(1, Ordering::SeqCst);
        json_schema!({ "type": "integer", "minimum": 0 })
    }
}

/// Doubles a counted number.
#[portico::tool]
async fn double(n: Counted) -> String {
    (n.0 * 2).to_string()
}

fn library() -> Library {
    Library {
        books: vec![
            Book { title: "Rust in Action".into(), year: 2021 },
            Book { title: "Programming Rust".into(), year: 2017 },
            Book { title: "The Rust Programming Language".into(), year: 2019 },
        ],
    }
}

fn server() -> Server {
    let builder = Server::builder(Implementation::new("macros", "0.0.1")).toolbox(library());
    double::register(greet::register(builder)).build()
}

async fn connect(mode: EraMode) -> Client {
    let (c, s) = portico::transport::memory::pair();
    server().connect(s);
    Client::builder(Implementation::new("test", "0.0.1")).era(mode).connect(c).await.expect("connect")
}

fn text(r: &CallToolResult) -> &str {
    match r.content.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("expected text, got {other:?}"),
    }
}

fn schema(tool: &Tool) -> Value {
    Value::Object(tool.input_schema.clone())
}

#[tokio::test]
async fn tools_are_listed_with_their_schemas() {
    for mode in MODES {
        let client = connect(mode).await;
        let tools = client.list_all_tools().await.expect("tools/list");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add", "divide", "double", "echo_text", "fail", "greet", "ping", "search", "whoami"]);
        let tool = |name: &str| tools.iter().find(|t| t.name == name).expect(name).clone();

        let search = tool("search");
        assert_eq!(search.description.as_deref(), Some("Finds books whose title contains `query`."));
        assert_eq!(search.title.as_deref(), Some("Search books"));
        let hints = search.annotations.as_ref().expect("annotations");
        assert_eq!(
            (hints.read_only_hint, hints.open_world_hint, hints.destructive_hint),
            (Some(true), Some(false), None)
        );
        assert_eq!(
            schema(&search),
            json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": "Text to look for in titles." },
                    "limit": {
                        "type": "integer", "format": "uint32", "minimum": 0,
                        "default": 10, "description": "How many books at most."
                    },
                    "since": {
                        "type": ["integer", "null"], "format": "uint16", "minimum": 0, "maximum": 65535,
                        "description": "Only books published in or after this year."
                    },
                    "order": { "anyOf": [{ "$ref": "#/$defs/Order" }, { "type": "null" }] }
                },
                "required": ["query"],
                "$defs": { "Order": { "type": "string", "enum": ["oldest", "newest"] } }
            }),
            "{mode:?}"
        );
        assert_eq!(
            search.output_schema.map(Value::Object),
            Some(json!({
                "description": "Books found.",
                "type": "object",
                "properties": { "books": { "type": "array", "items": { "$ref": "#/$defs/Book" } } },
                "required": ["books"],
                "$defs": {
                    "Book": {
                        "type": "object",
                        "properties": {
                            "title": { "type": "string" },
                            "year": { "type": "integer", "format": "uint16", "minimum": 0, "maximum": 65535 }
                        },
                        "required": ["title", "year"]
                    }
                }
            }))
        );

        let add = tool("add");
        assert_eq!(schema(&add)["required"], json!(["a", "b"]));
        assert_eq!(add.output_schema.as_ref().map(|s| s["required"].clone()), Some(json!(["sum"])));
        assert_eq!(add.annotations, None);
        let divide = tool("divide");
        assert!(divide.output_schema.is_some());
        assert_eq!(divide.annotations.and_then(|a| a.idempotent_hint), Some(true));

        let echo = tool("echo_text");
        assert_eq!(echo.description.as_deref(), Some("Repeats the text."));
        assert_eq!(
            schema(&echo),
            json!({
                "type": "object",
                "properties": { "text": { "type": "string" }, "prefix": { "type": ["string", "null"] } },
                "required": ["text"]
            })
        );
        assert_eq!(echo.output_schema, None, "text results have no output schema");

        let closed = json!({ "type": "object", "additionalProperties": false });
        assert_eq!(schema(&tool("whoami")), closed, "context is not an argument");
        assert_eq!(schema(&tool("ping")), closed);
        assert_eq!(tool("ping").description, None);
        assert_eq!(
            schema(&tool("fail")),
            json!({
                "type": "object",
                "properties": {
                    "why": { "type": "string" },
                    "loud": { "type": "boolean", "default": false, "description": "Shout it." }
                },
                "required": ["why"]
            }),
            "serde attributes are forwarded"
        );
        let greet = tool("greet");
        assert_eq!(greet.description.as_deref(), Some("Greets someone."));
        assert_eq!(schema(&greet)["properties"]["name"]["description"], "Who to greet.");
        assert_eq!(greet, greet::tool(), "free tools list their definition");
        for t in &tools {
            let s = schema(t);
            assert_eq!(s["type"], "object", "{}", t.name);
            assert!(s.get("$schema").is_none() && s.get("title").is_none(), "{}: {s}", t.name);
        }
    }
}

#[tokio::test]
async fn calls_decode_arguments_and_convert_results() {
    for mode in MODES {
        let client = connect(mode).await;
        let call = |name: &'static str, args: Value| {
            let client = client.clone();
            async move { client.call_tool(name, args).await.expect(name) }
        };

        let r = call("search", json!({ "query": "Rust", "since": 2018, "order": "newest" })).await;
        let expected = json!({ "books": [
            { "title": "The Rust Programming Language", "year": 2019 },
            { "title": "Rust in Action", "year": 2021 }
        ]});
        assert_eq!(r.structured_content, Some(expected.clone()));
        assert_eq!(serde_json::from_str::<Value>(text(&r)).expect("text copy"), expected);
        let r = call("search", json!({ "query": "Rust", "limit": 1 })).await;
        assert_eq!(r.structured_content.expect("structured")["books"].as_array().map(Vec::len), Some(1));

        let r = call("add", json!({ "a": 40, "b": 2 })).await;
        assert_eq!(r.structured_content, Some(json!({ "sum": 42 })));
        assert_eq!(text(&r), r#"{"sum":42}"#);

        let r = call("divide", json!({ "a": 1, "b": 4 })).await;
        assert_eq!((r.structured_content, r.is_error), (Some(json!({ "value": 0.25 })), None));
        let r = call("divide", json!({ "a": 1, "b": 0 })).await;
        assert!(r.is_error());
        assert_eq!(text(&r), "division by zero");

        assert_eq!(text(&call("echo_text", json!({ "text": "hi" })).await), "hi");
        assert_eq!(text(&call("echo_text", json!({ "text": "hi", "prefix": "> " })).await), "> hi");
        let version = client.protocol_version().to_string();
        assert_eq!(text(&call("whoami", json!({})).await), version);
        assert_eq!(text(&call("ping", json!({})).await), "pong");
        assert_eq!(text(&call("greet", json!({ "name": "Ada" })).await), "Hello, Ada!");
        assert_eq!(text(&call("double", json!({ "n": 21 })).await), "42");

        let r = call("fail", json!({ "why": "out of ink" })).await;
        assert!(r.is_error(), "an Err is a tool execution error");
        assert_eq!(text(&r), "out of ink");
        assert_eq!(text(&call("fail", json!({ "why": "out of ink", "loud": true })).await), "OUT OF INK");

        // Arguments that do not decode: a tool execution error in these revisions.
        let r = call("add", json!({ "a": "forty", "b": 2 })).await;
        assert!(r.is_error());
        assert!(text(&r).contains("invalid arguments for tool add"), "{}", text(&r));
        let r = call("search", json!({})).await;
        assert!(r.is_error() && text(&r).contains("query"), "{}", text(&r));
    }
}

#[tokio::test]
async fn resources_bind_typed_template_variables() {
    for mode in MODES {
        let client = connect(mode).await;
        let templates = client.list_all_resource_templates().await.expect("templates");
        let t: Vec<(&str, &str)> = templates.iter().map(|t| (t.name.as_str(), t.uri_template.as_str())).collect();
        assert_eq!(t, [("book", "library://books/{index}{?format}"), ("profile", "users://{id}/profile")]);
        let profile = templates.iter().find(|t| t.name == "profile").expect("profile");
        assert_eq!(profile.description.as_deref(), Some("A user's profile."));
        assert_eq!(profile.mime_type.as_deref(), Some("application/json"));
        let resources = client.list_all_resources().await.expect("resources");
        assert_eq!(resources.len(), 1);
        assert_eq!((resources[0].uri.as_str(), resources[0].name.as_str()), ("library://motd", "motd"));
        assert_eq!(resources[0].title.as_deref(), Some("Message of the day"));

        let r = client.read_resource("users://7/profile").await.expect("read");
        let ResourceContents::Text(c) = &r.contents[0] else { panic!("text contents") };
        assert_eq!((c.uri.as_str(), c.mime_type.as_deref()), ("users://7/profile", Some("application/json")));
        assert_eq!(serde_json::from_str::<Value>(&c.text).expect("json"), json!({ "id": 7, "name": "user 7" }));

        let e = client.read_resource("users://seven/profile").await.expect_err("not a number");
        let e = e.peer_error().expect("protocol error");
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("\"seven\"") && e.message.contains("`id`"), "{}", e.message);

        let e = client.read_resource("users://0/profile").await.expect_err("no user 0");
        let code = e.peer_error().expect("protocol error").code;
        let expected = if client.protocol_version().is_stateless() {
            ErrorCode::INVALID_PARAMS
        } else {
            ErrorCode::RESOURCE_NOT_FOUND
        };
        assert_eq!(code, expected, "handler errors pass through");

        let r = client.read_resource("library://motd").await.expect("motd");
        let ResourceContents::Text(c) = &r.contents[0] else { panic!("text contents") };
        assert_eq!((c.text.as_str(), c.mime_type.as_deref()), ("Read something old.", None));

        let r = client.read_resource("library://books/1").await.expect("book");
        assert_eq!(r.contents[0].uri(), "library://books/1");
        let ResourceContents::Text(c) = &r.contents[0] else { panic!("text contents") };
        assert_eq!(c.text, "Programming Rust (2017)");
        let r = client.read_resource("library://books/1?format=json").await.expect("book as json");
        let ResourceContents::Text(c) = &r.contents[0] else { panic!("text contents") };
        assert_eq!(c.text, r#"{"title":"Programming Rust","year":2017}"#);
        let e = client.read_resource("library://books/-1").await.expect_err("usize");
        assert_eq!(e.peer_error().map(|e| e.code), Some(ErrorCode::INVALID_PARAMS));
    }
}

#[tokio::test]
async fn prompts_take_typed_arguments() {
    for mode in MODES {
        let client = connect(mode).await;
        let prompts = client.list_all_prompts().await.expect("prompts");
        assert_eq!(prompts.len(), 1);
        let p = &prompts[0];
        assert_eq!((p.name.as_str(), p.title.as_deref()), ("review", Some("Code review")));
        assert_eq!(p.description.as_deref(), Some("Asks for a code review."));
        let args: Vec<(&str, Option<&str>, Option<bool>)> =
            p.arguments.iter().flatten().map(|a| (a.name.as_str(), a.description.as_deref(), a.required)).collect();
        assert_eq!(
            args,
            [
                ("code", Some("The code to review."), Some(true)),
                ("language", Some("Its language."), Some(false)),
                ("depth", Some("How thorough, 1 to 5."), Some(false)),
            ]
        );

        let args =
            |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        let r =
            client.get_prompt("review", args(&[("code", "fn main() {}"), ("language", "rust")])).await.expect("get");
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.messages[0].content.as_text(), Some("Review this rust code at depth 3:\nfn main() {}"));
        let r = client.get_prompt("review", args(&[("code", "x"), ("depth", "5")])).await.expect("get");
        assert_eq!(r.messages[0].content.as_text(), Some("Review this unknown code at depth 5:\nx"));

        let e = client.get_prompt("review", args(&[("code", "x"), ("depth", "deep")])).await.expect_err("u8");
        let e = e.peer_error().expect("protocol error");
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("`depth`"), "{}", e.message);
        let e = client.get_prompt("review", args(&[])).await.expect_err("code is required");
        assert_eq!(e.peer_error().map(|e| e.code), Some(ErrorCode::INVALID_PARAMS));
    }
}

#[tokio::test]
async fn completions_answer_their_own_argument() {
    for mode in MODES {
        let client = connect(mode).await;
        assert!(client.server_capabilities().completions.is_some());
        let complete = |reference: CompletionReference, arg: &str, value: &str| {
            client.complete(CompleteRequestParams::new(reference, CompleteArgument::new(arg, value)))
        };
        let r = complete(CompletionReference::prompt("review"), "language", "r").await.expect("complete");
        assert_eq!(r.completion.values, ["rust", "ruby"]);
        let r = complete(CompletionReference::resource("users://{id}/profile"), "id", "12").await.expect("complete");
        assert_eq!(r.completion.values, ["12", "123"]);
        let params = CompleteRequestParams::new(
            CompletionReference::resource("users://{id}/profile"),
            CompleteArgument::new("id", "9"),
        )
        .with_context_argument("other", "x");
        assert_eq!(client.complete(params).await.expect("complete").completion.values, ["context"]);
        let r = complete(CompletionReference::prompt("review"), "code", "").await.expect("complete");
        assert!(r.completion.values.is_empty(), "arguments without a completion function get no suggestions");
    }
}

#[tokio::test]
async fn schemas_are_computed_once() {
    let servers: Vec<Server> = (0..3).map(|_| server()).collect();
    for mode in MODES {
        for s in &servers {
            let (c, t) = portico::transport::memory::pair();
            s.connect(t);
            let client =
                Client::builder(Implementation::new("test", "0.0.1")).era(mode).connect(c).await.expect("connect");
            client.list_all_tools().await.expect("tools/list");
            for n in 0..3 {
                client.call_tool("double", json!({ "n": n })).await.expect("call");
            }
        }
    }
    assert_eq!(COUNTED_SCHEMAS.load(Ordering::SeqCst), 1, "one schema generation for every server, list and call");
    assert_eq!(double::tool(), double::tool());
    assert_eq!(Library::tools(), Library::tools());

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        x: u8,
    }
    assert!(std::ptr::eq(input_schema::<Args>(), input_schema::<Args>()), "the cached object is shared");
}

#[test]
fn toolbox_lists_its_tool_definitions() {
    let names: Vec<String> = Library::tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["search", "add", "divide", "echo_text", "whoami", "ping", "fail"], "in source order");
}

#[tokio::test]
async fn functions_stay_callable() {
    assert_eq!(Library::divide(1.0, 2.0).map(|q| q.value), Ok(0.5));
    assert_eq!(library().add(1, 2).await.sum, 3);
    assert_eq!(Library::motd(), "Read something old.");
    assert_eq!(double(Counted(4)).await, "8");
}

#[tokio::test]
async fn free_functions_work_in_any_scope_and_toolboxes_can_be_shared() {
    /// Says how long a word is.
    #[portico::tool(name = "len")]
    fn length(word: String) -> String {
        word.len().to_string()
    }

    /// A constant.
    #[portico::resource("numbers://answer", mime_type = "text/plain")]
    fn answer() -> String {
        "42".into()
    }

    /// A long text, encoded once.
    #[portico::resource("numbers://table/{n}")]
    fn table(n: u32) -> Result<portico::server::EncodedContents, HandlerError> {
        let text: String = (1..=n).map(|i| format!("{i}\t\"{}\"\n", i * i)).collect();
        Ok(portico::server::EncodedContents::new([ResourceContents::text(format!("numbers://table/{n}"), text)]))
    }

    /// Counts to n.
    #[portico::prompt]
    fn count(n: u8) -> Vec<portico::schema::PromptMessage> {
        (1..=n).map(|i| portico::schema::PromptMessage::user(i.to_string())).collect()
    }

    #[portico::completion(prompt = "count", arg = "n")]
    fn digits(prefix: &str, _cx: &RequestContext) -> Result<Vec<String>, HandlerError> {
        Ok((1..=9).map(|d| d.to_string()).filter(|d| d.starts_with(prefix)).collect())
    }

    let shared = Arc::new(library());
    let builder = Server::builder(Implementation::new("local", "0.0.1")).toolbox(Arc::clone(&shared));
    let server =
        digits::register(count::register(table::register(answer::register(length::register(builder))))).build();
    assert_eq!(answer::resource().uri, "numbers://answer");
    assert_eq!(count::prompt().arguments.map(|a| a.len()), Some(1));
    for mode in MODES {
        let (c, s) = portico::transport::memory::pair();
        server.connect(s);
        let client = Client::builder(Implementation::new("test", "0.0.1")).era(mode).connect(c).await.expect("connect");
        assert_eq!(text(&client.call_tool("len", json!({ "word": "four" })).await.expect("len")), "4");
        assert_eq!(text(&client.call_tool("add", json!({ "a": 1, "b": 1 })).await.expect("add")), r#"{"sum":2}"#);
        let r = client.read_resource("numbers://answer").await.expect("answer");
        assert_eq!(r.contents[0].mime_type(), Some("text/plain"));
        let r = client.read_resource("numbers://table/2000").await.expect("table");
        let ResourceContents::Text(t) = &r.contents[0] else { panic!("text contents") };
        assert!(t.text.starts_with("1\t\"1\"\n2\t\"4\"\n") && t.text.ends_with("2000\t\"4000000\"\n"), "{mode:?}");
        let r = client.get_prompt("count", [("n".to_owned(), "3".to_owned())]).await.expect("count");
        assert_eq!(r.messages.len(), 3);
        let p = CompleteRequestParams::new(CompletionReference::prompt("count"), CompleteArgument::new("n", "7"));
        assert_eq!(client.complete(p).await.expect("complete").completion.values, ["7"]);
    }
    assert_eq!(Arc::strong_count(&shared), 1 + 10, "one clone per handler taking `self` (ten of them)");
}
