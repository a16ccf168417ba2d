//! (temporary; replaced by the schema work)
#![allow(missing_docs)]
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
