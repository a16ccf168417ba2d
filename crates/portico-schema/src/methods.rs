//! Method and notification names of every revision.
//!
//! Each constant notes the revisions that define it when that is not all of them.

/// `initialize` (handshake era).
pub const INITIALIZE: &str = "initialize";
/// `ping` (handshake era).
pub const PING: &str = "ping";
/// `server/discover` (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";

/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";

/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe` (handshake era).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (handshake era).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";

/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";

/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `logging/setLevel` (handshake era).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

/// `sampling/createMessage` (a server-to-client request; an input request in 2026-07-28).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `elicitation/create` (2025-06-18 and later; an input request in 2026-07-28).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `roots/list` (a server-to-client request; an input request in 2026-07-28).
pub const ROOTS_LIST: &str = "roots/list";

/// `subscriptions/listen` (2026-07-28).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// `tasks/get` (2025-11-25, experimental; also the 2026-07-28 tasks extension).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result` (2025-11-25, experimental).
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list` (2025-11-25, experimental).
pub const TASKS_LIST: &str = "tasks/list";
/// `tasks/cancel` (2025-11-25, experimental; also the 2026-07-28 tasks extension).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/update` (2026-07-28 tasks extension `io.modelcontextprotocol/tasks`).
pub const TASKS_UPDATE: &str = "tasks/update";

/// `notifications/initialized` (handshake era).
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled`.
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// `notifications/message`.
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// `notifications/tools/list_changed`.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed`.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/resources/list_changed`.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/resources/updated`.
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/roots/list_changed` (handshake era).
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// `notifications/elicitation/complete` (2025-11-25 only).
pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `notifications/subscriptions/acknowledged` (2026-07-28).
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `notifications/tasks/status` (2025-11-25, experimental).
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";
/// `notifications/tasks` (2026-07-28 tasks extension, on a listen stream).
pub const NOTIFICATION_TASKS: &str = "notifications/tasks";

/// Every request method above, in no particular order.
pub const ALL_REQUEST_METHODS: &[&str] = &[
    INITIALIZE,
    PING,
    SERVER_DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    PROMPTS_LIST,
    PROMPTS_GET,
    COMPLETION_COMPLETE,
    LOGGING_SET_LEVEL,
    SAMPLING_CREATE_MESSAGE,
    ELICITATION_CREATE,
    ROOTS_LIST,
    SUBSCRIPTIONS_LISTEN,
    TASKS_GET,
    TASKS_RESULT,
    TASKS_LIST,
    TASKS_CANCEL,
    TASKS_UPDATE,
];

/// Every notification method above, in no particular order.
pub const ALL_NOTIFICATION_METHODS: &[&str] = &[
    NOTIFICATION_INITIALIZED,
    NOTIFICATION_CANCELLED,
    NOTIFICATION_PROGRESS,
    NOTIFICATION_MESSAGE,
    NOTIFICATION_TOOLS_LIST_CHANGED,
    NOTIFICATION_PROMPTS_LIST_CHANGED,
    NOTIFICATION_RESOURCES_LIST_CHANGED,
    NOTIFICATION_RESOURCES_UPDATED,
    NOTIFICATION_ROOTS_LIST_CHANGED,
    NOTIFICATION_ELICITATION_COMPLETE,
    NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
    NOTIFICATION_TASKS_STATUS,
    NOTIFICATION_TASKS,
];
