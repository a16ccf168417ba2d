//! Content blocks: what tools return, prompts contain and sampling exchanges.
//!
//! Every block struct writes its own `type` member, so it round-trips on its own
//! (`{"type":"text","text":"hi"}` as a [`TextContent`]) and inside [`ContentBlock`] or
//! [`SamplingMessageContentBlock`] without a duplicate key. The enums choose their variant from
//! `type` and report an unknown one by name.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::capabilities::JsonObject;
use crate::lifecycle::Icon;
use crate::meta::Meta;
use crate::resources::Resource;
use crate::serde_util::{self, tags};

/// Who a message or an annotation is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// Hints about how a client should use an object (content block, resource, template).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who the object is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (optional) to 1 (required).
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "serde_util::opt_f64_compact")]
    pub priority: Option<f64>,
    /// When the object was last modified, ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Annotations {
    /// No annotations.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the audience.
    pub fn with_audience(mut self, audience: impl IntoIterator<Item = Role>) -> Self {
        self.audience = Some(audience.into_iter().collect());
        self
    }
    /// Sets the priority (0 to 1).
    pub fn with_priority(mut self, priority: f64) -> Self {
        self.priority = Some(priority);
        self
    }
    /// Sets the last-modified timestamp (ISO 8601).
    pub fn with_last_modified(mut self, last_modified: impl Into<String>) -> Self {
        self.last_modified = Some(last_modified.into());
        self
    }
}

/// Text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextContent {
    #[serde(rename = "type", default)]
    kind: tags::Text,
    /// The text.
    #[serde(serialize_with = "crate::long_text::serialize")]
    pub text: String,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TextContent {
    /// A text block.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent { text: text.into(), ..Default::default() }
    }
    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// An image, base64-encoded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImageContent {
    #[serde(rename = "type", default)]
    kind: tags::Image,
    /// Base64-encoded image data.
    #[serde(serialize_with = "crate::long_text::serialize")]
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ImageContent {
    /// An image from base64 `data` of type `mime_type`.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent { data: data.into(), mime_type: mime_type.into(), ..Default::default() }
    }
    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// Audio, base64-encoded (2025-03-26 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AudioContent {
    #[serde(rename = "type", default)]
    kind: tags::Audio,
    /// Base64-encoded audio data.
    #[serde(serialize_with = "crate::long_text::serialize")]
    pub data: String,
    /// MIME type, e.g. `audio/wav`.
    pub mime_type: String,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AudioContent {
    /// Audio from base64 `data` of type `mime_type`.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        AudioContent { data: data.into(), mime_type: mime_type.into(), ..Default::default() }
    }
    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// A link to a resource the client may read (2025-06-18 and later): a [`Resource`] with
/// `"type": "resource_link"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLink {
    #[serde(rename = "type", default)]
    kind: tags::ResourceLink,
    /// The resource's URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes, before any encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourceLink {
    /// A link to `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink { uri: uri.into(), name: name.into(), ..Default::default() }
    }
    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
    /// The resource this link describes.
    pub fn to_resource(&self) -> Resource {
        let mut r = Resource::new(self.uri.clone(), self.name.clone());
        r.title.clone_from(&self.title);
        r.description.clone_from(&self.description);
        r.mime_type.clone_from(&self.mime_type);
        r.size = self.size;
        r.annotations.clone_from(&self.annotations);
        r.icons.clone_from(&self.icons);
        r.meta.clone_from(&self.meta);
        r.extra.clone_from(&self.extra);
        r
    }
}

impl From<Resource> for ResourceLink {
    fn from(r: Resource) -> Self {
        ResourceLink {
            kind: tags::ResourceLink,
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            size: r.size,
            annotations: r.annotations,
            icons: r.icons,
            meta: r.meta,
            extra: r.extra,
        }
    }
}

/// The contents of a resource embedded in a message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmbeddedResource {
    #[serde(rename = "type", default)]
    kind: tags::Resource,
    /// The contents.
    pub resource: ResourceContents,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl EmbeddedResource {
    /// Embeds `resource`.
    pub fn new(resource: impl Into<ResourceContents>) -> Self {
        EmbeddedResource { resource: resource.into(), ..Default::default() }
    }
    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// The text contents of a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    #[serde(serialize_with = "crate::long_text::serialize")]
    pub text: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TextResourceContents {
    /// `text` as the contents of `uri`.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        TextResourceContents { uri: uri.into(), text: text.into(), ..Default::default() }
    }
    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// The binary contents of a resource, base64-encoded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded bytes.
    #[serde(serialize_with = "crate::long_text::serialize")]
    pub blob: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl BlobResourceContents {
    /// Base64 `blob` as the contents of `uri`.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        BlobResourceContents { uri: uri.into(), blob: blob.into(), ..Default::default() }
    }
    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// The contents of a resource: text or binary. Chosen by the presence of `text` or `blob`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// Text contents of `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text(TextResourceContents::new(uri, text))
    }
    /// Base64 binary contents of `uri`.
    pub fn blob(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        ResourceContents::Blob(BlobResourceContents::new(uri, blob))
    }
    /// The URI, whichever the kind.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(c) => &c.uri,
            ResourceContents::Blob(c) => &c.uri,
        }
    }
    /// The MIME type, whichever the kind.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(c) => c.mime_type.as_deref(),
            ResourceContents::Blob(c) => c.mime_type.as_deref(),
        }
    }
}

impl Default for ResourceContents {
    fn default() -> Self {
        ResourceContents::Text(TextResourceContents::default())
    }
}

impl From<TextResourceContents> for ResourceContents {
    fn from(c: TextResourceContents) -> Self {
        ResourceContents::Text(c)
    }
}

impl From<BlobResourceContents> for ResourceContents {
    fn from(c: BlobResourceContents) -> Self {
        ResourceContents::Blob(c)
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let obj = serde_util::object(d)?;
        if obj.contains_key("text") {
            serde_util::decode(obj).map(ResourceContents::Text)
        } else if obj.contains_key("blob") {
            serde_util::decode(obj).map(ResourceContents::Blob)
        } else {
            Err(serde::de::Error::custom("resource contents need a \"text\" or a \"blob\" member"))
        }
    }
}

/// A request from the model to call a tool, inside a sampling message (2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolUseContent {
    #[serde(rename = "type", default)]
    kind: tags::ToolUse,
    /// Identifies this call; the matching [`ToolResultContent`] carries it as `toolUseId`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    pub input: JsonObject,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolUseContent {
    /// A call `id` of tool `name` with `input`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: JsonObject) -> Self {
        ToolUseContent { id: id.into(), name: name.into(), input, ..Default::default() }
    }
}

/// The result of a tool call, inside a sampling message (2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResultContent {
    #[serde(rename = "type", default)]
    kind: tags::ToolResult,
    /// The `id` of the [`ToolUseContent`] answered.
    pub tool_use_id: String,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown members, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolResultContent {
    /// The result of call `tool_use_id`.
    pub fn new(tool_use_id: impl Into<String>, content: Vec<ContentBlock>) -> Self {
        ToolResultContent { tool_use_id: tool_use_id.into(), content, ..Default::default() }
    }
    /// Sets the structured result.
    pub fn with_structured_content(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }
    /// Marks the result as an error (or not).
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }
}

/// A block of content in a tool result, a prompt message or an embedded context.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `"type": "text"`.
    Text(TextContent),
    /// `"type": "image"`.
    Image(ImageContent),
    /// `"type": "audio"`.
    Audio(AudioContent),
    /// `"type": "resource_link"`.
    ResourceLink(ResourceLink),
    /// `"type": "resource"`.
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }
    /// An image block from base64 `data`.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent::new(data, mime_type))
    }
    /// An audio block from base64 `data`.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent::new(data, mime_type))
    }
    /// A link to a resource.
    pub fn resource_link(link: impl Into<ResourceLink>) -> Self {
        ContentBlock::ResourceLink(link.into())
    }
    /// An embedded resource.
    pub fn resource(contents: impl Into<ResourceContents>) -> Self {
        ContentBlock::Resource(EmbeddedResource::new(contents))
    }
    /// The text, for a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
    /// The `type` member of this block.
    pub fn kind(&self) -> &'static str {
        match self {
            ContentBlock::Text(_) => tags::Text::VALUE,
            ContentBlock::Image(_) => tags::Image::VALUE,
            ContentBlock::Audio(_) => tags::Audio::VALUE,
            ContentBlock::ResourceLink(_) => tags::ResourceLink::VALUE,
            ContentBlock::Resource(_) => tags::Resource::VALUE,
        }
    }
}

const CONTENT_BLOCK_TYPES: &[&str] = &["text", "image", "audio", "resource_link", "resource"];

/// A text block whose `type` comes first, as most servers write it, is read straight from the
/// decoder; any other block is read into an object first, then decoded as its `type` says.
impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ContentBlock;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block (a JSON object)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
                let mut obj = Map::new();
                match map.next_key::<BlockMember>()? {
                    Some(BlockMember::Type) => {
                        let tag: Value = map.next_value()?;
                        if tag.as_str() == Some(tags::Text::VALUE) {
                            return TextContent::read_members(map).map(ContentBlock::Text);
                        }
                        obj.insert("type".to_owned(), tag);
                    }
                    Some(BlockMember::Other(name)) => {
                        obj.insert(name, map.next_value()?);
                    }
                    None => {}
                }
                // As any JSON object is read here: a member given twice keeps its last value.
                while let Some((name, value)) = map.next_entry::<String, Value>()? {
                    obj.insert(name, value);
                }
                ContentBlock::from_object(obj)
            }
        }
        d.deserialize_map(V)
    }
}

crate::serde_util::member_names! {
    /// The first member name of a content block: `type`, or another.
    enum BlockMember {
        Type = "type",
    }
}

impl TextContent {
    /// The members of a text block after its `type`, read one by one.
    fn read_members<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<TextContent, A::Error> {
        use serde::de::Error;
        let mut block = TextContent::default();
        let (mut text, mut annotations, mut meta) = (None, None, None);
        // A member given twice keeps its last value, as in any other block.
        while let Some(name) = map.next_key::<TextMember>()? {
            match name {
                TextMember::Type => {
                    let again: Value = map.next_value()?;
                    if again.as_str() != Some(tags::Text::VALUE) {
                        return Err(A::Error::custom(format_args!("a text block's type is given again as {again}")));
                    }
                }
                TextMember::Text => text = Some(map.next_value::<String>()?),
                TextMember::Annotations => annotations = Some(map.next_value::<Option<Annotations>>()?),
                TextMember::Meta => meta = Some(map.next_value::<Option<Meta>>()?),
                TextMember::Other(name) => {
                    let value = map.next_value::<Value>()?;
                    block.extra.insert(name, value);
                }
            }
        }
        block.text = text.ok_or_else(|| A::Error::missing_field("text"))?;
        block.annotations = annotations.flatten();
        block.meta = meta.flatten();
        Ok(block)
    }
}

crate::serde_util::member_names! {
    /// A member name of a text block.
    enum TextMember {
        Type = "type",
        Text = "text",
        Annotations = "annotations",
        Meta = "_meta",
    }
}

impl ContentBlock {
    /// The block a whole object is, as its `type` says.
    fn from_object<E: serde::de::Error>(obj: Map<String, Value>) -> Result<Self, E> {
        match serde_util::str_member(&obj, "type") {
            Some(tags::Text::VALUE) => serde_util::decode(obj).map(ContentBlock::Text),
            Some(tags::Image::VALUE) => serde_util::decode(obj).map(ContentBlock::Image),
            Some(tags::Audio::VALUE) => serde_util::decode(obj).map(ContentBlock::Audio),
            Some(tags::ResourceLink::VALUE) => serde_util::decode(obj).map(ContentBlock::ResourceLink),
            Some(tags::Resource::VALUE) => serde_util::decode(obj).map(ContentBlock::Resource),
            other => Err(serde_util::unknown_variant("content block", "type", other, CONTENT_BLOCK_TYPES)),
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        ContentBlock::Text(c)
    }
}
impl From<ImageContent> for ContentBlock {
    fn from(c: ImageContent) -> Self {
        ContentBlock::Image(c)
    }
}
impl From<AudioContent> for ContentBlock {
    fn from(c: AudioContent) -> Self {
        ContentBlock::Audio(c)
    }
}
impl From<ResourceLink> for ContentBlock {
    fn from(c: ResourceLink) -> Self {
        ContentBlock::ResourceLink(c)
    }
}
impl From<EmbeddedResource> for ContentBlock {
    fn from(c: EmbeddedResource) -> Self {
        ContentBlock::Resource(c)
    }
}

/// A block of content in a sampling message (2025-11-25 adds tool use and tool results).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SamplingMessageContentBlock {
    /// `"type": "text"`.
    Text(TextContent),
    /// `"type": "image"`.
    Image(ImageContent),
    /// `"type": "audio"`.
    Audio(AudioContent),
    /// `"type": "tool_use"`.
    ToolUse(ToolUseContent),
    /// `"type": "tool_result"`.
    ToolResult(ToolResultContent),
}

impl SamplingMessageContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        SamplingMessageContentBlock::Text(TextContent::new(text))
    }
    /// The text, for a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            SamplingMessageContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
    /// The `type` member of this block.
    pub fn kind(&self) -> &'static str {
        match self {
            SamplingMessageContentBlock::Text(_) => tags::Text::VALUE,
            SamplingMessageContentBlock::Image(_) => tags::Image::VALUE,
            SamplingMessageContentBlock::Audio(_) => tags::Audio::VALUE,
            SamplingMessageContentBlock::ToolUse(_) => tags::ToolUse::VALUE,
            SamplingMessageContentBlock::ToolResult(_) => tags::ToolResult::VALUE,
        }
    }
}

const SAMPLING_BLOCK_TYPES: &[&str] = &["text", "image", "audio", "tool_use", "tool_result"];

impl<'de> Deserialize<'de> for SamplingMessageContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let obj = serde_util::object(d)?;
        match serde_util::str_member(&obj, "type") {
            Some(tags::Text::VALUE) => serde_util::decode(obj).map(SamplingMessageContentBlock::Text),
            Some(tags::Image::VALUE) => serde_util::decode(obj).map(SamplingMessageContentBlock::Image),
            Some(tags::Audio::VALUE) => serde_util::decode(obj).map(SamplingMessageContentBlock::Audio),
            Some(tags::ToolUse::VALUE) => serde_util::decode(obj).map(SamplingMessageContentBlock::ToolUse),
            Some(tags::ToolResult::VALUE) => serde_util::decode(obj).map(SamplingMessageContentBlock::ToolResult),
            other => Err(serde_util::unknown_variant("sampling content block", "type", other, SAMPLING_BLOCK_TYPES)),
        }
    }
}

impl From<TextContent> for SamplingMessageContentBlock {
    fn from(c: TextContent) -> Self {
        SamplingMessageContentBlock::Text(c)
    }
}
impl From<ImageContent> for SamplingMessageContentBlock {
    fn from(c: ImageContent) -> Self {
        SamplingMessageContentBlock::Image(c)
    }
}
impl From<AudioContent> for SamplingMessageContentBlock {
    fn from(c: AudioContent) -> Self {
        SamplingMessageContentBlock::Audio(c)
    }
}
impl From<ToolUseContent> for SamplingMessageContentBlock {
    fn from(c: ToolUseContent) -> Self {
        SamplingMessageContentBlock::ToolUse(c)
    }
}
impl From<ToolResultContent> for SamplingMessageContentBlock {
    fn from(c: ToolResultContent) -> Self {
        SamplingMessageContentBlock::ToolResult(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_round_trips_standalone_and_inside_the_enum_with_one_type_key() {
        let wire = json!({"type": "text", "text": "hi"});
        let standalone: TextContent = serde_json::from_value(wire.clone()).expect("standalone");
        assert!(standalone.extra.is_empty(), "type must not land in extra");
        assert_eq!(serde_json::to_value(&standalone).expect("ser"), wire);

        // A block decoded on its own and then wrapped writes `type` exactly once.
        let block = ContentBlock::from(standalone);
        let s = serde_json::to_string(&block).expect("ser");
        assert_eq!(s.matches("\"type\"").count(), 1, "{s}");
        assert_eq!(serde_json::from_str::<ContentBlock>(&s).expect("de"), block);
        assert_eq!(serde_json::to_value(ContentBlock::text("hi")).expect("ser"), wire);
    }

    #[test]
    fn standalone_struct_refuses_another_type_and_accepts_a_missing_one() {
        assert!(serde_json::from_value::<TextContent>(json!({"type": "image", "text": "x"})).is_err());
        let lenient: TextContent = serde_json::from_value(json!({"text": "x"})).expect("no type");
        assert_eq!(serde_json::to_value(lenient).expect("ser"), json!({"type": "text", "text": "x"}));
    }

    #[test]
    fn enum_variant_follows_type_not_shape() {
        // Image and audio have the same members; only `type` tells them apart.
        let audio: ContentBlock =
            serde_json::from_value(json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav"})).expect("audio");
        assert!(matches!(audio, ContentBlock::Audio(_)));
        let image: ContentBlock =
            serde_json::from_value(json!({"type": "image", "data": "AA==", "mimeType": "image/png"})).expect("image");
        assert!(matches!(image, ContentBlock::Image(_)));
        let err = serde_json::from_value::<ContentBlock>(json!({"type": "video", "data": "AA=="})).expect_err("video");
        assert!(err.to_string().contains("\"video\""), "{err}");
        assert!(serde_json::from_value::<ContentBlock>(json!({"text": "no type"})).is_err());
        // tool_use is a sampling block, not a content block.
        let tool_use = json!({"type": "tool_use", "id": "1", "name": "t", "input": {}});
        assert!(serde_json::from_value::<ContentBlock>(tool_use.clone()).is_err());
        assert!(matches!(
            serde_json::from_value::<SamplingMessageContentBlock>(tool_use).expect("sampling"),
            SamplingMessageContentBlock::ToolUse(_)
        ));
    }

    #[test]
    fn unknown_members_survive_in_every_position() {
        let wire = json!({
            "type": "resource",
            "resource": {"uri": "file:///a", "blob": "AA==", "x-res": 1},
            "annotations": {"audience": ["user"], "priority": 1, "x-ann": true},
            "x-block": "kept"
        });
        let block: ContentBlock = serde_json::from_value(wire.clone()).expect("de");
        let ContentBlock::Resource(ref embedded) = block else { panic!("not a resource: {block:?}") };
        assert!(matches!(embedded.resource, ResourceContents::Blob(_)));
        assert_eq!(embedded.extra.get("x-block"), Some(&json!("kept")));
        assert_eq!(serde_json::to_value(&block).expect("ser"), wire);
    }

    #[test]
    fn integral_priorities_stay_integers() {
        let a = Annotations::new().with_priority(1.0);
        assert_eq!(serde_json::to_string(&a).expect("ser"), r#"{"priority":1}"#);
        let a = Annotations::new().with_priority(0.25);
        assert_eq!(serde_json::to_string(&a).expect("ser"), r#"{"priority":0.25}"#);
    }

    #[test]
    fn resource_link_is_a_resource_with_a_type() {
        let link = ResourceLink::new("file:///x", "x").with_mime_type("text/plain");
        let v = serde_json::to_value(ContentBlock::resource_link(link.clone())).expect("ser");
        assert_eq!(v, json!({"type": "resource_link", "uri": "file:///x", "name": "x", "mimeType": "text/plain"}));
        assert_eq!(ResourceLink::from(link.to_resource()), link);
    }
}

#[cfg(test)]
mod block_decoding {
    use super::*;
    use serde_json::json;

    fn block(text: &str) -> Result<ContentBlock, String> {
        serde_json::from_str::<ContentBlock>(text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_text_block_reads_the_same_whatever_the_order_of_its_members() {
        let first = r#"{"type":"text","text":"hi","annotations":{"priority":0.5},"_meta":{"k":1},"x-a":[1]}"#;
        let later = r#"{"x-a":[1],"_meta":{"k":1},"text":"hi","annotations":{"priority":0.5},"type":"text"}"#;
        let a = block(first).expect("type first");
        assert_eq!(block(later).expect("type last"), a);
        // From a value, as from text.
        let v: Value = serde_json::from_str(first).expect("json");
        assert_eq!(serde_json::from_value::<ContentBlock>(v).expect("from a value"), a);
        let ContentBlock::Text(t) = a else { panic!("a text block") };
        assert_eq!(t.text, "hi");
        assert_eq!(t.annotations.and_then(|a| a.priority), Some(0.5));
        assert_eq!(t.meta.as_ref().and_then(|m| m.get("k")), Some(&json!(1)));
        assert_eq!(t.extra, Map::from_iter([("x-a".to_owned(), json!([1]))]));
    }

    #[test]
    fn a_text_block_keeps_the_last_of_a_repeated_member_and_refuses_a_second_type() {
        for text in [r#"{"type":"text","text":"a","text":"b"}"#, r#"{"text":"a","type":"text","text":"b"}"#] {
            assert_eq!(block(text), Ok(ContentBlock::text("b")), "{text}");
        }
        assert_eq!(block(r#"{"type":"text","type":"text","text":"b"}"#), Ok(ContentBlock::text("b")));
        let e = block(r#"{"type":"text","text":"a","type":"image"}"#).expect_err("two types");
        assert!(e.contains("given again"), "{e}");
    }

    #[test]
    fn a_bad_block_says_what_is_wrong() {
        for (text, why) in [
            (r#"{"type":"text"}"#, "missing field `text`"),
            (r#"{"type":"text","text":7}"#, "invalid type"),
            (r#"{"type":"video","text":"a"}"#, "unknown content block type \"video\""),
            (r#"{"text":"a"}"#, "missing its \"type\" member"),
            (r#"{}"#, "missing its \"type\" member"),
            (r#"{"type":7}"#, "missing its \"type\" member"),
            ("[]", "a content block"),
        ] {
            let e = block(text).expect_err(text);
            assert!(e.contains(why), "{text}: {e}");
        }
        // Other kinds still read through the object.
        assert_eq!(
            block(r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#),
            Ok(ContentBlock::image("AA==", "image/png"))
        );
    }
}
