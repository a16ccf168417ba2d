//! Every revision's message types (`portico-schema`): the first byte picks a type, the rest is
//! JSON decoded as that type. What decodes encodes, decodes again, and encodes to the same JSON
//! (decode then encode round-trips what was decoded). Protocol version strings parse and print
//! back as they were.
//!
//! One set of types serves every revision (older revisions' shapes are optional fields), so the
//! types below cover the handshake era (`InitializeRequestParams`, …) and 2026-07-28 alike.

use portico_schema::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

type Check = fn(&[u8]);

fn round_trip<T: DeserializeOwned + Serialize>(json: &[u8]) {
    let Ok(t) = serde_json::from_slice::<T>(json) else { return };
    let name = std::any::type_name::<T>();
    let first = serde_json::to_string(&t).unwrap_or_else(|e| panic!("{name} decoded but does not encode: {e}"));
    let again: T =
        serde_json::from_str(&first).unwrap_or_else(|e| panic!("{name} encoded as {first} does not decode: {e}"));
    let second = serde_json::to_string(&again).expect("encodes again");
    let (a, b): (Value, Value) =
        (serde_json::from_str(&first).expect("JSON"), serde_json::from_str(&second).expect("JSON"));
    assert_eq!(a, b, "{name}: encode(decode(encode(x))) differs from encode(x)");
}

macro_rules! t {
    ($t:ident) => {
        (stringify!($t), round_trip::<$t> as Check)
    };
}

/// The types, by the index the first input byte picks (modulo their number).
pub const TYPES: &[(&str, Check)] = &[
    t!(Annotations),
    t!(AudioContent),
    t!(BlobResourceContents),
    t!(BooleanSchema),
    t!(CallToolRequestParams),
    t!(CallToolResult),
    t!(CancelledNotificationParams),
    t!(ClientCapabilities),
    t!(CompleteArgument),
    t!(CompleteContext),
    t!(CompleteRequestParams),
    t!(CompleteResult),
    t!(Completion),
    t!(CompletionReference),
    t!(ContentBlock),
    t!(CreateMessageRequest),
    t!(CreateMessageRequestParams),
    t!(CreateMessageResult),
    t!(DiscoverRequestParams),
    t!(DiscoverResult),
    t!(ElicitAction),
    t!(ElicitRequest),
    t!(ElicitRequestFormParams),
    t!(ElicitRequestParams),
    t!(ElicitRequestURLParams),
    t!(ElicitResult),
    t!(ElicitationCapability),
    t!(ElicitationCompleteNotificationParams),
    t!(EmbeddedResource),
    t!(EmptyResult),
    t!(ErrorObject),
    t!(GetPromptRequestParams),
    t!(GetPromptResult),
    t!(Icon),
    t!(ImageContent),
    t!(Implementation),
    t!(IncludeContext),
    t!(InitializeRequestParams),
    t!(InitializeResult),
    t!(InputRequest),
    t!(InputRequiredResult),
    t!(InputResponse),
    t!(InputResponseRequestParams),
    t!(JSONRPCErrorResponse),
    t!(JSONRPCMessage),
    t!(JSONRPCNotification),
    t!(JSONRPCRequest),
    t!(JSONRPCResultResponse),
    t!(LegacyTitledEnumSchema),
    t!(ListChangedCapability),
    t!(ListPromptsResult),
    t!(ListResourceTemplatesResult),
    t!(ListResourcesResult),
    t!(ListRootsRequest),
    t!(ListRootsRequestParams),
    t!(ListRootsResult),
    t!(ListToolsResult),
    t!(LoggingLevel),
    t!(LoggingMessageNotificationParams),
    t!(MissingRequiredClientCapabilityData),
    t!(ModelHint),
    t!(ModelPreferences),
    t!(NotificationParams),
    t!(NumberSchema),
    t!(PaginatedRequestParams),
    t!(PrimitiveSchemaDefinition),
    t!(ProgressNotificationParams),
    t!(Prompt),
    t!(PromptArgument),
    t!(PromptMessage),
    t!(PromptReference),
    t!(ReadResourceRequestParams),
    t!(ReadResourceResult),
    t!(RequestId),
    t!(RequestMeta),
    t!(RequestedSchema),
    t!(Resource),
    t!(ResourceContents),
    t!(ResourceLink),
    t!(ResourceNotFoundData),
    t!(ResourceTemplate),
    t!(ResourceTemplateReference),
    t!(ResourceUpdatedNotificationParams),
    t!(ResourcesCapability),
    t!(ResultType),
    t!(Role),
    t!(Root),
    t!(RootsCapability),
    t!(SamplingCapability),
    t!(SamplingContent),
    t!(SamplingMessage),
    t!(SamplingMessageContentBlock),
    t!(ServerCapabilities),
    t!(SetLevelRequestParams),
    t!(StringSchema),
    t!(SubscribeRequestParams),
    t!(SubscriptionFilter),
    t!(SubscriptionsAcknowledgedNotificationParams),
    t!(SubscriptionsListenRequestParams),
    t!(SubscriptionsListenResult),
    t!(TextContent),
    t!(TextResourceContents),
    t!(TitledEnumItems),
    t!(TitledEnumOption),
    t!(TitledMultiSelectEnumSchema),
    t!(TitledSingleSelectEnumSchema),
    t!(Tool),
    t!(ToolAnnotations),
    t!(ToolChoice),
    t!(ToolResultContent),
    t!(ToolUseContent),
    t!(URLElicitationRequiredData),
    t!(UnsubscribeRequestParams),
    t!(UnsupportedProtocolVersionData),
    t!(UntitledEnumItems),
    t!(UntitledMultiSelectEnumSchema),
    t!(UntitledSingleSelectEnumSchema),
];

/// The check.
pub fn check(data: &[u8]) {
    let Some((first, json)) = data.split_first() else { return };
    let (_, check) = TYPES[*first as usize % TYPES.len()];
    check(json);
    if let Ok(text) = std::str::from_utf8(json) {
        if let Some(v) = ProtocolVersion::parse(text) {
            assert_eq!(v.to_string(), text, "a protocol version prints as another string");
        }
        let _ = ProtocolVersion::negotiate_handshake(text);
    }
}
