//! Private serde helpers: literal discriminator members, integral numbers, dispatch on a member.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serializer};
use serde_json::{Map, Value};

/// Declares a zero-sized type that serializes as one fixed string and deserializes only from it.
///
/// Structs whose JSON carries a constant discriminator (`"type": "text"`, `"mode": "url"`, …)
/// hold one of these in a private field: the struct then writes its own discriminator, so it
/// round-trips standalone and inside its enum without a duplicate key.
macro_rules! literal_tags {
    ($($name:ident = $lit:literal;)*) => {$(
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub(crate) struct $name;

        #[allow(dead_code)]
        impl $name {
            pub(crate) const VALUE: &'static str = $lit;
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($lit)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                if s == $lit {
                    Ok($name)
                } else {
                    Err(serde::de::Error::custom(format_args!("expected {:?}, found {:?}", $lit, s)))
                }
            }
        }
    )*};
}

/// Declares an enum of the member names a hand-written decoder knows, read as an identifier:
/// a known name costs no allocation, any other is kept as `Other`.
macro_rules! member_names {
    ($(#[$doc:meta])* enum $name:ident { $($variant:ident = $lit:literal,)* }) => {
        $(#[$doc])*
        enum $name {
            $($variant,)*
            Other(String),
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a member name")
                    }
                    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<$name, E> {
                        Ok(match name {
                            $($lit => $name::$variant,)*
                            other => $name::Other(other.to_owned()),
                        })
                    }
                }
                d.deserialize_identifier(V)
            }
        }
    };
}
pub(crate) use member_names;

/// The literal discriminators used across the crate.
pub(crate) mod tags {
    literal_tags! {
        Text = "text";
        Image = "image";
        Audio = "audio";
        ResourceLink = "resource_link";
        Resource = "resource";
        ToolUse = "tool_use";
        ToolResult = "tool_result";
        RefPrompt = "ref/prompt";
        RefResource = "ref/resource";
        String = "string";
        Boolean = "boolean";
        Array = "array";
        Object = "object";
        Form = "form";
        Url = "url";
        ElicitationCreate = "elicitation/create";
        SamplingCreateMessage = "sampling/createMessage";
        RootsList = "roots/list";
    }
}

/// Largest magnitude below which every integer is exactly representable as an `f64`.
const EXACT_F64_INT: f64 = 9_007_199_254_740_992.0;

/// Serializes an `f64` that holds an integer as a JSON integer (`50`, not `50.0`).
///
/// JSON has one number type; writing integral values without a fraction keeps a message that
/// said `"progress": 50` byte-for-byte the same after a round trip.
pub(crate) fn f64_compact<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < EXACT_F64_INT {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

/// [`f64_compact`] for an optional member (only called when `Some`, see `skip_serializing_if`).
pub(crate) fn opt_f64_compact<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => f64_compact(v, s),
        None => s.serialize_none(),
    }
}

/// Reads any JSON object, for enums that choose their variant by looking at one member.
pub(crate) fn object<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    Map::<String, Value>::deserialize(d)
}

/// The string value of `key` in `obj`, if it is a string.
pub(crate) fn str_member<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// Decodes a whole object into the variant type chosen for it.
pub(crate) fn decode<T: DeserializeOwned, E: serde::de::Error>(obj: Map<String, Value>) -> Result<T, E> {
    serde_json::from_value(Value::Object(obj)).map_err(E::custom)
}

/// The error for an object whose discriminator names no known variant.
pub(crate) fn unknown_variant<E: serde::de::Error>(what: &str, key: &str, found: Option<&str>, expected: &[&str]) -> E {
    match found {
        Some(found) => E::custom(format_args!("unknown {what} {key} {found:?}, expected one of {expected:?}")),
        None => E::custom(format_args!("{what} is missing its {key:?} member (one of {expected:?})")),
    }
}
