//! The resource fixtures (`resources-*` scenarios).

use portico::schema::{BlobResourceContents, Resource, ResourceContents, ResourceTemplate, TextResourceContents};
use portico::server::{HandlerError, RequestContext, ResourceRequest, ServerBuilder};

use crate::PNG_BASE64;

/// The text of `test://static-text`.
pub const STATIC_TEXT: &str = "This is the content of the static text resource.";
/// The text of `test://watched-resource`.
pub const WATCHED_TEXT: &str = "This resource can be subscribed to for updates.";

/// The JSON text `test://template/{id}/data` returns, keys in the order the suite shows.
pub fn template_text(id: &str) -> String {
    let quoted = |s: &str| serde_json::Value::from(s).to_string();
    format!(r#"{{"id":{},"templateTest":true,"data":{}}}"#, quoted(id), quoted(&format!("Data for ID: {id}")))
}

/// Adds every resource fixture.
pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .resource(
            Resource::new("test://static-text", "static-text")
                .with_description("A static text resource")
                .with_mime_type("text/plain"),
            |r: ResourceRequest, _: RequestContext| async move {
                Ok::<_, HandlerError>(ResourceContents::from(
                    TextResourceContents::new(r.uri(), STATIC_TEXT).with_mime_type("text/plain"),
                ))
            },
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .with_description("A static binary resource (a 1x1 PNG)")
                .with_mime_type("image/png"),
            |r: ResourceRequest, _: RequestContext| async move {
                Ok::<_, HandlerError>(ResourceContents::from(
                    BlobResourceContents::new(r.uri(), PNG_BASE64).with_mime_type("image/png"),
                ))
            },
        )
        .resource(
            Resource::new("test://watched-resource", "watched-resource")
                .with_description("A resource clients may subscribe to")
                .with_mime_type("text/plain"),
            |r: ResourceRequest, _: RequestContext| async move {
                Ok::<_, HandlerError>(ResourceContents::from(
                    TextResourceContents::new(r.uri(), WATCHED_TEXT).with_mime_type("text/plain"),
                ))
            },
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template-data")
                .with_description("JSON data for any id")
                .with_mime_type("application/json"),
            |r: ResourceRequest, _: RequestContext| async move {
                let id = r.var("id").ok_or_else(|| HandlerError::resource_not_found(r.uri()))?;
                Ok::<_, HandlerError>(ResourceContents::from(
                    TextResourceContents::new(r.uri(), template_text(id)).with_mime_type("application/json"),
                ))
            },
        )
}

#[cfg(test)]
mod tests {
    #[test]
    fn template_text_is_the_suites_json() {
        assert_eq!(super::template_text("123"), r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#);
        let odd: serde_json::Value = serde_json::from_str(&super::template_text("a\"b")).expect("valid JSON");
        assert_eq!(odd["id"], "a\"b");
    }
}
