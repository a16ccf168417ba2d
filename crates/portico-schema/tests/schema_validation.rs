//! Values built with the Rust constructors serialize to JSON that the normative JSON Schema of
//! each revision accepts, under the definition of the same name.
//!
//! Handshake-era values are validated against 2025-11-25 and stateless-era values (with `resultType`,
//! cache hints and the required request `_meta`) against 2026-07-28; a type that exists in both
//! is validated against both.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use jsonschema::{Retrieve, Uri};
use portico_schema::*;
use serde::Serialize;
use serde_json::{Value, json};

const V2025: &str = "2025-11-25";
const V2026: &str = "2026-07-28";

/// Refuses every external `$ref`: validation must work from the local document alone.
struct NoRetrieval;

impl Retrieve for NoRetrieval {
    fn retrieve(&self, uri: &Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("refusing to retrieve {uri}").into())
    }
}

/// The parsed `schema.json` of a revision.
fn schema_document(revision: &str) -> &'static Value {
    static DOCS: OnceLock<Mutex<HashMap<String, &'static Value>>> = OnceLock::new();
    let docs = DOCS.get_or_init(Default::default);
    let mut docs = docs.lock().expect("schema cache");
    docs.entry(revision.to_owned()).or_insert_with(|| {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../testdata/spec/schema/{revision}/schema.json"));
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        Box::leak(Box::new(serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))))
    })
}

/// Where the definitions live: `$defs` from 2025-11-25 on, `definitions` before.
fn defs_key(doc: &Value) -> &'static str {
    if doc.get("$defs").is_some() { "$defs" } else { "definitions" }
}

fn has_definition(revision: &str, name: &str) -> bool {
    let doc = schema_document(revision);
    doc[defs_key(doc)].get(name).is_some()
}

/// Errors of validating `instance` against definition `name` of `revision`.
fn validation_errors(revision: &str, name: &str, instance: &Value) -> Vec<String> {
    let doc = schema_document(revision);
    let key = defs_key(doc);
    assert!(doc[key].get(name).is_some(), "{revision} has no definition {name}");
    // The whole document with a root `$ref` to the definition: every `#/$defs/…` stays resolvable.
    let mut root = doc.clone();
    let Value::Object(ref mut obj) = root else { panic!("schema document is not an object") };
    obj.insert("$ref".into(), Value::from(format!("#/{key}/{name}")));
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .with_retriever(NoRetrieval)
        .build(&root)
        .unwrap_or_else(|e| panic!("compile {revision} {name}: {e}"));
    validator.iter_errors(instance).map(|e| format!("at {:?}: {e}", e.instance_path.to_string())).collect()
}

#[track_caller]
fn assert_valid_in(revisions: &[&str], name: &str, value: &impl Serialize) {
    let instance = serde_json::to_value(value).expect("serialize");
    for revision in revisions {
        let errors = validation_errors(revision, name, &instance);
        assert!(errors.is_empty(), "{name} invalid in {revision}:\n{}\ninstance: {instance:#}", errors.join("\n"));
    }
}

/// Validates against both revisions.
#[track_caller]
fn assert_valid(name: &str, value: &impl Serialize) {
    assert_valid_in(&[V2025, V2026], name, value);
}

/// Validates a result as a handshake-era server sends it (2025-11-25) and, stamped by
/// [`stateless`], as a 2026-07-28 server sends it (in both revisions: the older schema tolerates the
/// added members).
#[track_caller]
fn assert_result<T: ResultEnvelope + Serialize + Clone>(name: &str, result: &T) {
    assert_valid_in(&[V2025], name, result);
    assert_valid(name, &stateless(result.clone()));
}

/// Stamps what a 2026-07-28 server adds to a result: `resultType` and, for cacheable results,
/// `ttlMs` and `cacheScope`.
fn stateless<T: ResultEnvelope>(mut result: T) -> T {
    *result.result_type_mut() = Some(ResultType::Complete);
    if let Some((ttl, scope)) = result.cache_mut() {
        *ttl = Some(60_000);
        *scope = Some(CacheScope::Private);
    }
    result
}

/// The per-request `_meta` 2026-07-28 requires.
fn request_meta() -> RequestMeta {
    RequestMeta::new()
        .with_protocol_version(V2026)
        .with_client_capabilities(ClientCapabilities::new().with_sampling(true).with_elicitation(true, true))
        .with_client_info(Implementation::new("test-client", "1.0.0"))
        .with_progress_token(7)
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn icon() -> Icon {
    Icon::new("https://example.com/icon.png").with_mime_type("image/png").with_sizes(["48x48"]).with_theme("dark")
}

fn weather_tool() -> Tool {
    Tool::new(
        "get_weather",
        object(json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})),
    )
    .with_title("Weather")
    .with_description("Current weather for a city")
    .with_icons([icon()])
    .with_output_schema(object(json!({"type": "object", "properties": {"temperature": {"type": "number"}}})))
    .with_annotations(
        ToolAnnotations::new()
            .with_title("Weather")
            .with_read_only(true)
            .with_destructive(false)
            .with_idempotent(true)
            .with_open_world(true),
    )
}

fn annotations() -> Annotations {
    Annotations::new()
        .with_audience([Role::User, Role::Assistant])
        .with_priority(0.5)
        .with_last_modified("2025-01-12T15:00:58Z")
}

fn all_content_blocks() -> Vec<ContentBlock> {
    vec![
        ContentBlock::Text(TextContent::new("hello").with_annotations(annotations())),
        ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png").with_annotations(annotations())),
        ContentBlock::audio("UklGRiQAAABXQVZF", "audio/wav"),
        ContentBlock::resource_link(
            Resource::new("file:///project/src/main.rs", "main.rs").with_mime_type("text/x-rust").with_size(42),
        ),
        ContentBlock::resource(TextResourceContents::new("file:///a.txt", "text").with_mime_type("text/plain")),
        ContentBlock::Resource(
            EmbeddedResource::new(BlobResourceContents::new("file:///a.bin", "AAEC")).with_annotations(annotations()),
        ),
    ]
}

#[test]
fn harness_rejects_invalid_values() {
    // Without these the positive tests below would prove nothing.
    assert!(!validation_errors(V2026, "Tool", &json!({"name": "x"})).is_empty(), "inputSchema is required");
    assert!(!validation_errors(V2026, "ContentBlock", &json!({"type": "video", "data": "x"})).is_empty());
    assert!(!validation_errors(V2026, "ListToolsResult", &json!({"tools": []})).is_empty(), "2026 needs resultType");
    assert!(validation_errors(V2025, "ListToolsResult", &json!({"tools": []})).is_empty());
    assert!(
        !validation_errors(V2025, "CallToolResult", &json!({"content": [], "structuredContent": [1]})).is_empty(),
        "2025-11-25 structuredContent is an object"
    );
    assert!(!validation_errors(V2026, "Resource", &json!({"uri": "not a uri", "name": "x"})).is_empty(), "formats");
}

#[test]
fn older_revisions_use_definitions() {
    for revision in ["2024-11-05", "2025-03-26", "2025-06-18"] {
        assert_eq!(defs_key(schema_document(revision)), "definitions", "{revision}");
    }
    assert!(has_definition("2024-11-05", "Tool") && !has_definition("2024-11-05", "ToolAnnotations"));
    // Types that exist in 2025-06-18 validate there too.
    assert_valid_in(&["2025-06-18"], "Tool", &weather_tool());
    assert_valid_in(&["2025-03-26", "2025-06-18"], "ToolAnnotations", &weather_tool().annotations);
}

#[test]
fn tools() {
    let tool = weather_tool();
    assert_valid("Tool", &tool);
    assert_valid("Tool", &Tool::without_arguments("now"));
    assert_valid("ToolAnnotations", &tool.annotations);
    assert_result("ListToolsResult", &ListToolsResult::new(vec![tool]).with_next_cursor("c2"));

    // 2026-07-28 allows any output schema.
    let list = Tool::new("list_users", object(json!({"type": "object"})))
        .with_output_schema(object(json!({"type": "array", "items": {"type": "string"}})));
    assert_valid_in(&[V2026], "Tool", &list);

    let params = CallToolRequestParams::new("get_weather")
        .with_arguments(object(json!({"city": "Paris"})))
        .with_meta(request_meta());
    assert_valid("CallToolRequestParams", &params);
    let request = JSONRPCRequest::new(RequestId::from("r1"), methods::TOOLS_CALL, Some(json!(params)));
    assert_valid("CallToolRequest", &request);
    let retry = params.with_request_state("opaque").with_input_responses(
        [("k".to_owned(), InputResponse::from(ElicitResult::accept(object(json!({"name": "octocat"})))))].into(),
    );
    assert_valid_in(&[V2026], "CallToolRequestParams", &retry);

    let structured = CallToolResult::structured(json!({"temperature": 22.5, "conditions": "sunny"}));
    assert_result("CallToolResult", &structured);
    assert_valid_in(&[V2026], "CallToolResult", &stateless(CallToolResult::structured(json!([1, 2]))));
    assert_result("CallToolResult", &CallToolResult::error("boom"));
    assert_result("CallToolResult", &CallToolResult::new(all_content_blocks()));
}

#[test]
fn content() {
    let blocks = all_content_blocks();
    for block in &blocks {
        assert_valid("ContentBlock", block);
    }
    let names = ["TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource", "EmbeddedResource"];
    for (block, name) in blocks.iter().zip(names) {
        assert_valid(name, block);
    }
    assert_valid("Annotations", &annotations());
    assert_valid("TextResourceContents", &TextResourceContents::new("file:///a", "t"));
    assert_valid("BlobResourceContents", &BlobResourceContents::new("file:///a", "AAEC").with_mime_type("x/y"));

    let tool_use = ToolUseContent::new("c1", "get_weather", object(json!({"city": "Paris"})));
    let tool_result = ToolResultContent::new("c1", vec![ContentBlock::text("18°C")])
        .with_structured_content(json!({"t": 18}))
        .with_is_error(false);
    assert_valid("ToolUseContent", &tool_use);
    assert_valid("ToolResultContent", &tool_result);
    for block in [
        SamplingMessageContentBlock::text("x"),
        SamplingMessageContentBlock::from(ImageContent::new("AA==", "image/png")),
        SamplingMessageContentBlock::from(AudioContent::new("AA==", "audio/wav")),
        SamplingMessageContentBlock::from(tool_use),
        SamplingMessageContentBlock::from(tool_result),
    ] {
        assert_valid("SamplingMessageContentBlock", &block);
    }
}

#[test]
fn prompts() {
    let prompt = Prompt::new("code_review")
        .with_title("Code review")
        .with_description("Review code")
        .with_argument(PromptArgument::new("code").with_title("Code").with_description("The code").with_required(true))
        .with_icons([icon()]);
    assert_valid("Prompt", &prompt);
    assert_valid("PromptArgument", &PromptArgument::new("language"));
    assert_result("ListPromptsResult", &ListPromptsResult::new(vec![prompt]).with_next_cursor("n"));

    let messages: Vec<PromptMessage> = all_content_blocks()
        .into_iter()
        .map(|b| PromptMessage::new(Role::User, b))
        .chain([PromptMessage::assistant("Looks good")])
        .collect();
    for m in &messages {
        assert_valid("PromptMessage", m);
    }
    let result = GetPromptResult::new(messages).with_description("A review");
    assert_result("GetPromptResult", &result);
    let params =
        GetPromptRequestParams::new("code_review").with_argument("code", "fn main() {}").with_meta(request_meta());
    assert_valid("GetPromptRequestParams", &params);
}

#[test]
fn resources() {
    let resource = Resource::new("file:///project/README.md", "README.md")
        .with_title("Readme")
        .with_description("Docs")
        .with_mime_type("text/markdown")
        .with_size(1024)
        .with_annotations(annotations())
        .with_icons([icon()]);
    assert_valid("Resource", &resource);
    let template = ResourceTemplate::new("file:///{path}", "files")
        .with_title("Files")
        .with_description("Project files")
        .with_mime_type("application/octet-stream")
        .with_annotations(annotations())
        .with_icons([icon()]);
    assert_valid("ResourceTemplate", &template);

    assert_result("ListResourcesResult", &ListResourcesResult::new(vec![resource]).with_next_cursor("p2"));
    assert_result("ListResourceTemplatesResult", &ListResourceTemplatesResult::new(vec![template]));

    let read = ReadResourceResult::new(vec![
        ResourceContents::text("file:///a.txt", "hello"),
        ResourceContents::blob("file:///a.bin", "AAEC"),
    ]);
    assert_result("ReadResourceResult", &read);
    assert_valid("ReadResourceResult", &stateless(read).with_cache(0, CacheScope::Public));
    assert_valid(
        "ReadResourceRequestParams",
        &ReadResourceRequestParams::new("file:///a.txt").with_meta(request_meta()),
    );

    assert_valid_in(&[V2025], "SubscribeRequestParams", &SubscribeRequestParams::new("file:///a.txt"));
    assert_valid_in(&[V2025], "UnsubscribeRequestParams", &UnsubscribeRequestParams::new("file:///a.txt"));
    assert_valid("ResourceUpdatedNotificationParams", &ResourceUpdatedNotificationParams::new("file:///a.txt"));
}

#[test]
fn lifecycle_and_discovery() {
    let server_caps = ServerCapabilities::new()
        .with_tools(true)
        .with_prompts(false)
        .with_resources(true, true)
        .with_logging()
        .with_completions();
    let server_info = Implementation::new("portico-test", "0.1.0").with_title("Portico").with_description("Tests");
    let init = InitializeResult::new(V2025, server_caps.clone(), server_info.clone());
    assert_valid_in(&[V2025], "InitializeResult", &init);
    let init_params = InitializeRequestParams::new(
        V2025,
        ClientCapabilities::new().with_roots(true).with_sampling(true).with_elicitation(true, true),
        Implementation::new("client", "1.0"),
    );
    assert_valid_in(&[V2025], "InitializeRequestParams", &init_params);
    assert_valid("ServerCapabilities", &server_caps);
    assert_valid("Implementation", &server_info);

    let mut discover = stateless(
        DiscoverResult::new([ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25], server_caps)
            .with_instructions("Use get_weather"),
    );
    discover.meta = Some(object(json!({"io.modelcontextprotocol/serverInfo": server_info})));
    assert_eq!(discover.ttl_ms, Some(60_000));
    assert_valid_in(&[V2026], "DiscoverResult", &discover);
    let discover_response = JSONRPCResultResponse::new(RequestId::Number(1), json!(discover));
    assert_valid_in(&[V2026], "DiscoverResultResponse", &discover_response);
    let discover_request = JSONRPCRequest::new(
        RequestId::Number(1),
        methods::SERVER_DISCOVER,
        Some(json!(DiscoverRequestParams::new(request_meta()))),
    );
    assert_valid_in(&[V2026], "DiscoverRequest", &discover_request);
    assert_valid("PaginatedRequestParams", &PaginatedRequestParams::new().with_cursor("c").with_meta(request_meta()));
    assert_valid_in(&[V2025], "PaginatedRequestParams", &PaginatedRequestParams::new());
}

fn form_schema() -> RequestedSchema {
    let colors = [TitledEnumOption::new("#FF0000", "Red"), TitledEnumOption::new("#00FF00", "Green")];
    RequestedSchema::new()
        .with_required_property(
            "email",
            StringSchema::new()
                .with_title("Email")
                .with_description("Your address")
                .with_format("email")
                .with_length(Some(3), Some(50))
                .with_default("a@example.com"),
        )
        .with_property(
            "age",
            NumberSchema::new(NumberSchemaType::Integer).with_range(Some(18.0), Some(130.0)).with_default(30.0),
        )
        .with_property("ratio", NumberSchema::new(NumberSchemaType::Number).with_default(0.5))
        .with_property("subscribe", BooleanSchema::new().with_title("Subscribe").with_default(false))
        .with_property("size", UntitledSingleSelectEnumSchema::new(["S", "M", "L"]).with_default("M"))
        .with_property("color", TitledSingleSelectEnumSchema::new(colors.to_vec()).with_title("Color"))
        .with_property(
            "tags",
            UntitledMultiSelectEnumSchema::new(["a", "b"]).with_items(Some(1), Some(2)).with_default(["a"]),
        )
        .with_property("palette", TitledMultiSelectEnumSchema::new(colors.to_vec()).with_default(["#FF0000"]))
        .with_property("legacy", LegacyTitledEnumSchema::new(["x", "y"], ["Ex", "Why"]))
}

#[test]
fn elicitation() {
    let schema = form_schema();
    for (name, def) in &schema.properties {
        assert_valid("PrimitiveSchemaDefinition", def);
        let def_name = match def {
            PrimitiveSchemaDefinition::String(_) => "StringSchema",
            PrimitiveSchemaDefinition::Number(_) => "NumberSchema",
            PrimitiveSchemaDefinition::Boolean(_) => "BooleanSchema",
            PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_) => "UntitledSingleSelectEnumSchema",
            PrimitiveSchemaDefinition::TitledSingleSelectEnum(_) => "TitledSingleSelectEnumSchema",
            PrimitiveSchemaDefinition::UntitledMultiSelectEnum(_) => "UntitledMultiSelectEnumSchema",
            PrimitiveSchemaDefinition::TitledMultiSelectEnum(_) => "TitledMultiSelectEnumSchema",
            PrimitiveSchemaDefinition::LegacyTitledEnum(_) => "LegacyTitledEnumSchema",
            other => panic!("{name}: unexpected {other:?}"),
        };
        assert_valid(def_name, def);
    }
    assert_eq!(schema.properties.len(), 9);

    let form = ElicitRequestFormParams::new("Tell us about you", schema);
    assert_valid("ElicitRequestFormParams", &form);
    assert_valid("ElicitRequestFormParams", &form.clone().with_explicit_mode(true));
    assert_valid("ElicitRequestParams", &ElicitRequestParams::from(form.clone()));

    let url = ElicitRequestURLParams::new("Set your API key", "https://example.com/key");
    assert_valid_in(&[V2026], "ElicitRequestURLParams", &url);
    let url_2025 = url.clone().with_elicitation_id("e-1");
    assert_valid_in(&[V2025], "ElicitRequestURLParams", &url_2025);
    assert!(!validation_errors(V2025, "ElicitRequestURLParams", &json!(url)).is_empty(), "2025 needs elicitationId");

    let accepted =
        ElicitResult::accept(object(json!({"email": "a@example.com", "age": 30, "tags": ["a"], "subscribe": true})));
    for result in [accepted, ElicitResult::decline(), ElicitResult::cancel()] {
        assert_valid("ElicitResult", &result);
    }
    assert_valid_in(&[V2026], "ElicitRequest", &ElicitRequest::new(form));
    assert_valid_in(
        &[V2025],
        "ElicitationCompleteNotification",
        &JSONRPCNotification::new(
            methods::NOTIFICATION_ELICITATION_COMPLETE,
            Some(json!(ElicitationCompleteNotificationParams::new("e-1"))),
        ),
    );
}

fn sampling_params() -> CreateMessageRequestParams {
    let question = SamplingMessage::user_text("Weather in Paris?");
    let call = SamplingMessage::new(
        Role::Assistant,
        vec![SamplingMessageContentBlock::from(ToolUseContent::new(
            "c1",
            "get_weather",
            object(json!({"city": "Paris"})),
        ))],
    );
    let answer = SamplingMessage::new(
        Role::User,
        vec![SamplingMessageContentBlock::from(ToolResultContent::new("c1", vec![ContentBlock::text("18°C")]))],
    );
    CreateMessageRequestParams::new(vec![question, call, answer], 500)
        .with_model_preferences(
            ModelPreferences::new()
                .with_hint("claude-3-sonnet")
                .with_cost_priority(0.3)
                .with_speed_priority(0.8)
                .with_intelligence_priority(1.0),
        )
        .with_system_prompt("You are helpful.")
        .with_include_context(IncludeContext::None)
        .with_temperature(0.7)
        .with_stop_sequences(["STOP"])
        .with_tools(vec![weather_tool()])
        .with_tool_choice(ToolChoice::new(ToolChoiceMode::Auto))
}

#[test]
fn sampling() {
    let params = sampling_params();
    assert_valid("CreateMessageRequestParams", &params);
    for m in &params.messages {
        assert_valid("SamplingMessage", m);
    }
    assert_valid("ModelPreferences", &params.model_preferences);
    assert_valid("ToolChoice", &params.tool_choice);
    assert_valid_in(&[V2026], "CreateMessageRequest", &CreateMessageRequest::new(params));

    let text =
        CreateMessageResult::new(SamplingMessageContentBlock::text("Paris"), "claude").with_stop_reason("endTurn");
    let tools = CreateMessageResult::new(
        vec![SamplingMessageContentBlock::from(ToolUseContent::new(
            "c2",
            "get_weather",
            object(json!({"city": "Rome"})),
        ))],
        "claude",
    )
    .with_stop_reason("toolUse");
    assert_valid("CreateMessageResult", &text);
    assert_valid("CreateMessageResult", &tools);
}

#[test]
fn multi_round_trip() {
    let result = InputRequiredResult::new()
        .with_input_request("form", InputRequest::elicit(ElicitRequestFormParams::new("Name?", form_schema())))
        .with_input_request("url", InputRequest::elicit(ElicitRequestURLParams::new("Key", "https://example.com/k")))
        .with_input_request("sample", InputRequest::sampling(sampling_params()))
        .with_input_request("roots", InputRequest::list_roots())
        .with_request_state("eyJzIjoxfQ");
    assert_valid_in(&[V2026], "InputRequiredResult", &result);
    assert_valid_in(&[V2026], "InputRequests", &result.input_requests);
    for request in result.input_requests.iter().flat_map(|r| r.values()) {
        assert_valid_in(&[V2026], "InputRequest", request);
    }
    assert_valid_in(
        &[V2026],
        "CallToolResultResponse",
        &JSONRPCResultResponse::new(RequestId::Number(3), json!(result)),
    );

    let responses: InputResponses = [
        ("form".to_owned(), InputResponse::from(ElicitResult::accept(object(json!({"email": "a@b.c"}))))),
        (
            "sample".to_owned(),
            InputResponse::from(CreateMessageResult::new(SamplingMessageContentBlock::text("ok"), "m")),
        ),
        (
            "roots".to_owned(),
            InputResponse::from(ListRootsResult::new(vec![Root::new("file:///home/u").with_name("home")])),
        ),
    ]
    .into();
    assert_valid_in(&[V2026], "InputResponses", &responses);
    for response in responses.values() {
        assert_valid_in(&[V2026], "InputResponse", response);
    }
}

#[test]
fn roots_completion_subscriptions_notifications() {
    let roots = ListRootsResult::new(vec![Root::new("file:///home/user/project").with_name("Project")]);
    assert_valid("ListRootsResult", &roots);
    assert_valid("Root", &roots.roots[0]);
    assert_valid_in(&[V2026], "ListRootsRequest", &ListRootsRequest::new());

    let complete =
        CompleteRequestParams::new(CompletionReference::prompt("code_review"), CompleteArgument::new("language", "py"))
            .with_context_argument("framework", "flask")
            .with_meta(request_meta());
    assert_valid("CompleteRequestParams", &complete);
    assert_valid(
        "CompleteRequestParams",
        &CompleteRequestParams::new(
            ResourceTemplateReference::new("file:///{path}"),
            CompleteArgument::new("path", "sr"),
        )
        .with_meta(request_meta()),
    );
    assert_valid("PromptReference", &PromptReference::new("code_review"));
    assert_valid("ResourceTemplateReference", &ResourceTemplateReference::new("file:///{path}"));
    let many = CompleteResult::new((0..150).map(|i| format!("v{i}")));
    assert_result("CompleteResult", &many);

    let filter = SubscriptionFilter::new()
        .with_tools_list_changed()
        .with_prompts_list_changed()
        .with_resources_list_changed()
        .with_resource_subscription("file:///project/config.json");
    assert_valid_in(&[V2026], "SubscriptionFilter", &filter);
    assert_valid_in(
        &[V2026],
        "SubscriptionsListenRequestParams",
        &SubscriptionsListenRequestParams::new(filter.clone()).with_meta(request_meta()),
    );
    let ack = SubscriptionsAcknowledgedNotificationParams::new(RequestId::from("listen-1"), filter);
    assert_valid_in(&[V2026], "SubscriptionsAcknowledgedNotificationParams", &ack);
    assert_valid_in(
        &[V2026],
        "SubscriptionsListenResult",
        &stateless(SubscriptionsListenResult::new(RequestId::from("listen-1"))),
    );

    assert_valid(
        "CancelledNotificationParams",
        &CancelledNotificationParams::new(Some(RequestId::Number(4))).with_reason("user"),
    );
    assert_valid_in(&[V2025], "CancelledNotificationParams", &CancelledNotificationParams::new(None));
    assert!(
        !validation_errors(V2026, "CancelledNotificationParams", &json!(CancelledNotificationParams::new(None)))
            .is_empty()
    );
    let progress = ProgressNotificationParams::new("tok", 50.0).with_total(100.0).with_message("halfway");
    assert_valid("ProgressNotificationParams", &progress);
    assert_valid(
        "ProgressNotification",
        &JSONRPCNotification::new(methods::NOTIFICATION_PROGRESS, Some(json!(progress))),
    );
    assert_valid(
        "LoggingMessageNotificationParams",
        &LoggingMessageNotificationParams::new(LoggingLevel::Warning, json!({"disk": "low"})).with_logger("fs"),
    );
    assert_valid("NotificationParams", &NotificationParams::new());
    assert_valid_in(
        &[V2026],
        "ToolListChangedNotification",
        &JSONRPCNotification::new(
            methods::NOTIFICATION_TOOLS_LIST_CHANGED,
            Some(json!(NotificationParams::for_subscription(RequestId::from("listen-1")))),
        ),
    );
}

#[test]
fn errors_with_data() {
    let unsupported = JSONRPCErrorResponse::new(
        Some(RequestId::Number(1)),
        ErrorObject::unsupported_protocol_version(
            "1900-01-01",
            [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25],
        ),
    );
    assert_valid_in(&[V2026], "UnsupportedProtocolVersionError", &unsupported);
    let missing = JSONRPCErrorResponse::new(
        Some(RequestId::Number(2)),
        ErrorObject::missing_client_capability(ClientCapabilities::new().with_elicitation(true, false)),
    );
    assert_valid_in(&[V2026], "MissingRequiredClientCapabilityError", &missing);
    let mismatch = JSONRPCErrorResponse::new(None, ErrorObject::header_mismatch("Mcp-Name does not match params.name"));
    assert_valid_in(&[V2026], "HeaderMismatchError", &mismatch);
    assert_valid_in(
        &[V2026],
        "InvalidParamsError",
        &ErrorObject::resource_not_found("file:///x", ProtocolVersion::V2026_07_28),
    );
    assert_valid_in(&[V2026], "ParseError", &ErrorObject::parse_error("bad json"));
    assert_valid_in(&[V2026], "MethodNotFoundError", &ErrorObject::method_not_found("foo/bar"));
    assert_valid_in(&[V2026], "InternalError", &ErrorObject::internal_error("oops"));
    assert_valid(
        "JSONRPCErrorResponse",
        &JSONRPCErrorResponse::new(
            Some(RequestId::from("r")),
            ErrorObject::resource_not_found("file:///x", ProtocolVersion::V2025_11_25),
        ),
    );

    let url_required = JSONRPCErrorResponse::new(
        Some(RequestId::Number(5)),
        ErrorObject::url_elicitation_required(vec![
            ElicitRequestURLParams::new("Authorize", "https://example.com/auth").with_elicitation_id("e-9"),
        ]),
    );
    assert_valid_in(&[V2025], "URLElicitationRequiredError", &url_required);

    // A wrong code is caught.
    let wrong = JSONRPCErrorResponse::new(
        None,
        ErrorObject::new(ErrorCode(-32000), "x").with_data(json!({"supported": [], "requested": "x"})),
    );
    assert!(!validation_errors(V2026, "UnsupportedProtocolVersionError", &json!(wrong)).is_empty());
}
