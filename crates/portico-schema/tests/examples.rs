//! Every official example message of 2026-07-28 decodes into the Rust type of its directory's
//! name and encodes back to the same JSON.
//!
//! Besides equality, each decode is checked for members that fell through to an `extra` (or
//! `RequestMeta.other`) catch-all: a misspelt field would still round-trip through `extra`, so
//! equality alone would not notice it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use portico_schema::methods::*;
use portico_schema::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

type Check = fn(&Value) -> Result<Value, String>;

/// How the files of one example directory are read.
#[derive(Clone, Copy)]
enum Kind {
    /// The bare type.
    Plain(Check),
    /// A `JSONRPCRequest` with this method whose params decode with the check.
    Request(&'static str, Check),
    /// A `JSONRPCNotification` with this method whose params decode with the check.
    Notification(&'static str, Check),
    /// A `JSONRPCResultResponse` whose result decodes with the check.
    Response(Check),
    /// A `JSONRPCErrorResponse` with this code, whose data decodes with the check when given.
    ErrorResponse(i32, Option<Check>),
    /// A bare `ErrorObject` with this code.
    Error(i32),
}

use Kind::*;

/// Decodes `v` as `T`, refuses leftovers in catch-alls, and encodes it again.
fn typed<T: DeserializeOwned + Serialize + std::fmt::Debug>(v: &Value) -> Result<Value, String> {
    let t: T = serde_json::from_value(v.clone()).map_err(|e| format!("decode {}: {e}", std::any::type_name::<T>()))?;
    let leftovers = leftover_members(&format!("{t:?}"));
    if !leftovers.is_empty() {
        return Err(format!("members not mapped to fields of {}: {leftovers:?}", std::any::type_name::<T>()));
    }
    serde_json::to_value(&t).map_err(|e| format!("encode: {e}"))
}

/// Like [`typed`] but allows catch-all members (for examples that carry members the type's
/// schema does not define).
fn typed_lenient<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let t: T = serde_json::from_value(v.clone()).map_err(|e| format!("decode {}: {e}", std::any::type_name::<T>()))?;
    serde_json::to_value(&t).map_err(|e| format!("encode: {e}"))
}

/// Snippets of every non-empty `extra: {…}` / `other: {…}` in a `Debug` rendering.
fn leftover_members(debug: &str) -> Vec<String> {
    let mut found = Vec::new();
    for key in ["extra: {", "other: {"] {
        let mut rest = debug;
        while let Some(i) = rest.find(key) {
            let after = &rest[i + key.len()..];
            if !after.starts_with('}') {
                found.push(after.chars().take(80).collect());
            }
            rest = after;
        }
    }
    found
}

/// The directory → type mapping. Every directory must appear here and every entry must have a
/// directory.
const MAPPING: &[(&str, Kind)] = &[
    ("AudioContent", Plain(typed::<AudioContent>)),
    ("BlobResourceContents", Plain(typed::<BlobResourceContents>)),
    ("BooleanSchema", Plain(typed::<BooleanSchema>)),
    ("CallToolRequest", Request(TOOLS_CALL, typed::<CallToolRequestParams>)),
    ("CallToolRequestParams", Plain(typed::<CallToolRequestParams>)),
    ("CallToolResult", Plain(typed::<CallToolResult>)),
    ("CallToolResultResponse", Response(typed::<CallToolResult>)),
    ("CancelledNotification", Notification(NOTIFICATION_CANCELLED, typed::<CancelledNotificationParams>)),
    ("CancelledNotificationParams", Plain(typed::<CancelledNotificationParams>)),
    ("ClientCapabilities", Plain(typed::<ClientCapabilities>)),
    ("CompleteRequest", Request(COMPLETION_COMPLETE, typed::<CompleteRequestParams>)),
    ("CompleteRequestParams", Plain(typed::<CompleteRequestParams>)),
    ("CompleteResult", Plain(typed::<CompleteResult>)),
    ("CompleteResultResponse", Response(typed::<CompleteResult>)),
    // 2026-07-28 embeds these three in InputRequiredResult: `{method, params}` without an id.
    ("CreateMessageRequest", Plain(typed::<CreateMessageRequest>)),
    ("CreateMessageRequestParams", Plain(typed::<CreateMessageRequestParams>)),
    ("CreateMessageResult", Plain(typed::<CreateMessageResult>)),
    ("DiscoverRequest", Request(SERVER_DISCOVER, typed::<DiscoverRequestParams>)),
    ("DiscoverResult", Plain(typed::<DiscoverResult>)),
    ("DiscoverResultResponse", Response(typed::<DiscoverResult>)),
    ("ElicitRequest", Plain(typed::<ElicitRequest>)),
    ("ElicitRequestFormParams", Plain(typed::<ElicitRequestFormParams>)),
    ("ElicitRequestURLParams", Plain(typed::<ElicitRequestURLParams>)),
    ("ElicitResult", Plain(typed::<ElicitResult>)),
    ("EmbeddedResource", Plain(typed::<EmbeddedResource>)),
    ("GetPromptRequest", Request(PROMPTS_GET, typed::<GetPromptRequestParams>)),
    ("GetPromptRequestParams", Plain(typed::<GetPromptRequestParams>)),
    ("GetPromptResult", Plain(typed::<GetPromptResult>)),
    ("GetPromptResultResponse", Response(typed::<GetPromptResult>)),
    ("HeaderMismatchError", ErrorResponse(-32020, None)),
    ("ImageContent", Plain(typed::<ImageContent>)),
    ("InputRequests", Plain(typed::<InputRequests>)),
    ("InputRequiredResult", Plain(typed::<InputRequiredResult>)),
    ("InputResponses", Plain(typed::<InputResponses>)),
    ("InternalError", Error(-32603)),
    ("InvalidParamsError", Error(-32602)),
    ("ListPromptsRequest", Request(PROMPTS_LIST, typed::<PaginatedRequestParams>)),
    ("ListPromptsResult", Plain(typed::<ListPromptsResult>)),
    ("ListPromptsResultResponse", Response(typed::<ListPromptsResult>)),
    ("ListResourceTemplatesRequest", Request(RESOURCES_TEMPLATES_LIST, typed::<PaginatedRequestParams>)),
    ("ListResourceTemplatesResult", Plain(typed::<ListResourceTemplatesResult>)),
    ("ListResourceTemplatesResultResponse", Response(typed::<ListResourceTemplatesResult>)),
    ("ListResourcesRequest", Request(RESOURCES_LIST, typed::<PaginatedRequestParams>)),
    ("ListResourcesResult", Plain(typed::<ListResourcesResult>)),
    ("ListResourcesResultResponse", Response(typed::<ListResourcesResult>)),
    // The example carries an `id` the 2026-07-28 `ListRootsRequest` does not define; it is kept
    // in `extra` (checked in `list_roots_request_keeps_its_id`).
    ("ListRootsRequest", Plain(typed_lenient::<ListRootsRequest>)),
    ("ListRootsResult", Plain(typed::<ListRootsResult>)),
    ("ListToolsRequest", Request(TOOLS_LIST, typed::<PaginatedRequestParams>)),
    ("ListToolsResult", Plain(typed::<ListToolsResult>)),
    ("ListToolsResultResponse", Response(typed::<ListToolsResult>)),
    ("LoggingMessageNotification", Notification(NOTIFICATION_MESSAGE, typed::<LoggingMessageNotificationParams>)),
    ("LoggingMessageNotificationParams", Plain(typed::<LoggingMessageNotificationParams>)),
    ("MethodNotFoundError", Error(-32601)),
    ("MissingRequiredClientCapabilityError", ErrorResponse(-32021, Some(typed::<MissingRequiredClientCapabilityData>))),
    ("ModelPreferences", Plain(typed::<ModelPreferences>)),
    ("NumberSchema", Plain(typed::<NumberSchema>)),
    ("PaginatedRequestParams", Plain(typed::<PaginatedRequestParams>)),
    ("ParseError", Error(-32700)),
    ("ProgressNotification", Notification(NOTIFICATION_PROGRESS, typed::<ProgressNotificationParams>)),
    ("ProgressNotificationParams", Plain(typed::<ProgressNotificationParams>)),
    ("PromptListChangedNotification", Notification(NOTIFICATION_PROMPTS_LIST_CHANGED, typed::<NotificationParams>)),
    ("ReadResourceRequest", Request(RESOURCES_READ, typed::<ReadResourceRequestParams>)),
    ("ReadResourceResult", Plain(typed::<ReadResourceResult>)),
    ("ReadResourceResultResponse", Response(typed::<ReadResourceResult>)),
    ("Resource", Plain(typed::<Resource>)),
    ("ResourceLink", Plain(typed::<ResourceLink>)),
    ("ResourceListChangedNotification", Notification(NOTIFICATION_RESOURCES_LIST_CHANGED, typed::<NotificationParams>)),
    (
        "ResourceUpdatedNotification",
        Notification(NOTIFICATION_RESOURCES_UPDATED, typed::<ResourceUpdatedNotificationParams>),
    ),
    ("ResourceUpdatedNotificationParams", Plain(typed::<ResourceUpdatedNotificationParams>)),
    ("Root", Plain(typed::<Root>)),
    ("SamplingMessage", Plain(typed::<SamplingMessage>)),
    ("ServerCapabilities", Plain(typed::<ServerCapabilities>)),
    ("StringSchema", Plain(typed::<StringSchema>)),
    (
        "SubscriptionsAcknowledgedNotification",
        Notification(NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, typed::<SubscriptionsAcknowledgedNotificationParams>),
    ),
    ("SubscriptionsListenRequest", Request(SUBSCRIPTIONS_LISTEN, typed::<SubscriptionsListenRequestParams>)),
    ("SubscriptionsListenResult", Plain(typed::<SubscriptionsListenResult>)),
    ("SubscriptionsListenResultResponse", Response(typed::<SubscriptionsListenResult>)),
    ("TextContent", Plain(typed::<TextContent>)),
    ("TextResourceContents", Plain(typed::<TextResourceContents>)),
    ("TitledMultiSelectEnumSchema", Plain(typed::<TitledMultiSelectEnumSchema>)),
    ("TitledSingleSelectEnumSchema", Plain(typed::<TitledSingleSelectEnumSchema>)),
    ("Tool", Plain(typed::<Tool>)),
    ("ToolListChangedNotification", Notification(NOTIFICATION_TOOLS_LIST_CHANGED, typed::<NotificationParams>)),
    ("ToolResultContent", Plain(typed::<ToolResultContent>)),
    ("ToolUseContent", Plain(typed::<ToolUseContent>)),
    ("UnsupportedProtocolVersionError", ErrorResponse(-32022, Some(typed::<UnsupportedProtocolVersionData>))),
    ("UntitledMultiSelectEnumSchema", Plain(typed::<UntitledMultiSelectEnumSchema>)),
    ("UntitledSingleSelectEnumSchema", Plain(typed::<UntitledSingleSelectEnumSchema>)),
];

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/spec/schema/2026-07-28/examples")
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Decodes and re-encodes one example according to `kind`.
fn round_trip(kind: Kind, original: &Value) -> Result<Value, String> {
    match kind {
        Plain(check) => check(original),
        Request(method, check) => {
            let mut req: JSONRPCRequest = decode(original)?;
            if req.method != method {
                return Err(format!("method {:?}, expected {method:?}", req.method));
            }
            let params = req.params.as_ref().ok_or("request without params")?;
            req.params = Some(check(params)?);
            encode(&req)
        }
        Notification(method, check) => {
            let mut n: JSONRPCNotification = decode(original)?;
            if n.method != method {
                return Err(format!("method {:?}, expected {method:?}", n.method));
            }
            let params = n.params.as_ref().ok_or("notification without params")?;
            n.params = Some(check(params)?);
            encode(&n)
        }
        Response(check) => {
            let mut resp: JSONRPCResultResponse = decode(original)?;
            resp.result = check(&resp.result)?;
            encode(&resp)
        }
        ErrorResponse(code, data_check) => {
            let mut resp: JSONRPCErrorResponse = decode(original)?;
            if resp.error.code.0 != code {
                return Err(format!("code {}, expected {code}", resp.error.code));
            }
            match (data_check, resp.error.data.as_ref()) {
                (Some(check), Some(data)) => resp.error.data = Some(check(data)?),
                (Some(_), None) => return Err("error without its typed data".into()),
                (None, Some(data)) => return Err(format!("unexpected data {data}")),
                (None, None) => {}
            }
            encode(&resp)
        }
        Error(code) => {
            let err: ErrorObject = decode(original)?;
            if err.code.0 != code {
                return Err(format!("code {}, expected {code}", err.code));
            }
            encode(&err)
        }
    }
}

fn decode<T: DeserializeOwned>(v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("decode {}: {e}", std::any::type_name::<T>()))
}

fn encode<T: Serialize>(t: &T) -> Result<Value, String> {
    serde_json::to_value(t).map_err(|e| format!("encode: {e}"))
}

#[test]
fn every_example_round_trips_through_its_type() {
    let dir = examples_dir();
    let mut dirs: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 80, "expected the full example set, found {} directories", dirs.len());

    let mapped: BTreeSet<&str> = MAPPING.iter().map(|(name, _)| *name).collect();
    assert_eq!(mapped.len(), MAPPING.len(), "duplicate mapping entries");
    let unmapped: Vec<&String> = dirs.iter().filter(|d| !mapped.contains(d.as_str())).collect();
    assert!(unmapped.is_empty(), "example directories without a mapping: {unmapped:?}");
    let stale: Vec<&&str> = mapped.iter().filter(|m| !dirs.iter().any(|d| d == *m)).collect();
    assert!(stale.is_empty(), "mapping entries without a directory: {stale:?}");

    let mut failures = Vec::new();
    let mut files = 0;
    for (name, kind) in MAPPING {
        let mut paths: Vec<PathBuf> = fs::read_dir(dir.join(name))
            .unwrap_or_else(|e| panic!("read {name}: {e}"))
            .map(|e| e.expect("dir entry").path())
            .collect();
        paths.sort();
        assert!(!paths.is_empty(), "{name} holds no example");
        for path in paths {
            assert_eq!(path.extension().and_then(|e| e.to_str()), Some("json"), "{}", path.display());
            files += 1;
            let original = read_json(&path);
            let label = format!("{name}/{}", path.file_name().map(|f| f.to_string_lossy()).unwrap_or_default());
            match round_trip(*kind, &original) {
                Ok(again) if again == original => {}
                Ok(again) => failures.push(format!("{label}: round trip differs\n  was: {original}\n  now: {again}")),
                Err(e) => failures.push(format!("{label}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {files} examples failed:\n{}", failures.len(), failures.join("\n"));
}

fn example(dir: &str, file: &str) -> Value {
    read_json(&examples_dir().join(dir).join(file))
}

#[test]
fn input_examples_decode_to_the_right_variants() {
    let responses: InputResponses =
        serde_json::from_value(example("InputResponses", "elicitation-and-sampling-input-responses.json"))
            .expect("responses");
    assert!(matches!(responses["github_login"], InputResponse::Elicitation(ref r) if r.action == ElicitAction::Accept));
    let InputResponse::Sampling(ref sampled) = responses["capital_of_france"] else {
        panic!("capital_of_france is not a sampling result: {:?}", responses["capital_of_france"])
    };
    assert_eq!(sampled.model, "claude-3-sonnet-20240307");
    assert_eq!(sampled.content.blocks()[0].as_text(), Some("The capital of France is Paris."));

    let requests: InputRequests =
        serde_json::from_value(example("InputRequests", "elicitation-and-sampling-input-requests.json"))
            .expect("requests");
    let InputRequest::Elicitation(ref e) = requests["github_login"] else { panic!("github_login") };
    let ElicitRequestParams::Form(ref form) = e.params else { panic!("form expected") };
    assert!(form.has_explicit_mode());
    assert!(matches!(form.requested_schema.properties["name"], PrimitiveSchemaDefinition::String(_)));
    let InputRequest::Sampling(ref s) = requests["capital_of_france"] else { panic!("capital_of_france") };
    assert_eq!(s.params.max_tokens, 100);

    let result: InputRequiredResult = serde_json::from_value(example(
        "InputRequiredResult",
        "input-required-result-with-elicitation-and-sampling-and-request-state.json",
    ))
    .expect("result");
    assert_eq!(result.result_type, Some(ResultType::InputRequired));
    assert_eq!(result.input_requests.as_ref().map(|r| r.len()), Some(2));
}

#[test]
fn typed_members_land_in_typed_fields() {
    let tools: ListToolsResult =
        serde_json::from_value(example("ListToolsResult", "tools-list-with-cursor-and-ttl.json")).expect("tools");
    assert_eq!((tools.ttl_ms, tools.cache_scope), (Some(300_000), Some(CacheScope::Public)));
    assert_eq!(tools.next_cursor.as_deref(), Some("next-page-cursor"));
    assert_eq!(tools.tools[0].icons.as_ref().map(|i| i[0].sizes.clone()), Some(Some(vec!["48x48".to_owned()])));

    let params: CallToolRequestParams =
        serde_json::from_value(example("CallToolRequestParams", "tool-call-params-with-progress-token.json"))
            .expect("params");
    let meta = params.meta.expect("_meta");
    assert_eq!(meta.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(meta.progress_token, Some(RequestId::from("oivaizmir")));
    assert_eq!(meta.client_info.map(|c| c.name), Some("ExampleClient".to_owned()));

    let tool: Tool = serde_json::from_value(example("Tool", "tool-with-array-output-schema.json")).expect("tool");
    assert_eq!(tool.output_schema.and_then(|s| s.get("type").cloned()), Some(Value::from("array")));

    let result: CallToolResult =
        serde_json::from_value(example("CallToolResult", "result-with-array-structured-content.json")).expect("result");
    assert!(result.structured_content.as_ref().is_some_and(Value::is_array));

    let err: JSONRPCErrorResponse =
        serde_json::from_value(example("UnsupportedProtocolVersionError", "unsupported-version.json")).expect("err");
    let data: UnsupportedProtocolVersionData = err.error.data_as().expect("data").expect("typed data");
    assert_eq!(data.requested, "1900-01-01");
    assert_eq!(data.supported, ["2026-07-28", "2025-11-25"]);

    let listen: SubscriptionsListenResult =
        serde_json::from_value(example("SubscriptionsListenResult", "listen-closed.json")).expect("listen");
    assert_eq!(listen.subscription_id(), Some(RequestId::from("listen-1")));
}

#[test]
fn list_roots_request_keeps_its_id() {
    let req: ListRootsRequest =
        serde_json::from_value(example("ListRootsRequest", "list-roots-request.json")).expect("request");
    assert_eq!(req.params, None);
    assert_eq!(req.extra.get("id"), Some(&Value::from("list-roots-example")));
}

#[test]
fn leftover_detection_works() {
    // A member that no field claims is caught even though the round trip would succeed.
    let v = serde_json::json!({"type": "text", "text": "x", "txet": "typo"});
    assert_eq!(typed::<TextContent>(&v).err().map(|e| e.contains("txet")), Some(true));
    assert!(typed_lenient::<TextContent>(&v).is_ok_and(|again| again == v));
}
