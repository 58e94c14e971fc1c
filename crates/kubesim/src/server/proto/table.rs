//! The shape of the message table the decoder walks: each [`Message`] of the table (the
//! generated `messages.rs`) lists its [`Field`]s with the protobuf number, the JSON name and
//! how Go holds the value.

use super::ProtoError;

/// How a field is held in the Go struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Card {
    /// A plain value (always on the wire when it is a scalar or struct).
    Value,
    /// A pointer: on the wire only when set.
    Ptr,
    /// A slice: one wire record per element (scalars may also come packed).
    List,
    /// `map[string]T`: one `{1: key, 2: value}` entry message per element.
    Map,
}

/// The element type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    Str,
    Bool,
    I32,
    I64,
    Bytes,
    Time,
    MicroTime,
    Quantity,
    IntOrString,
    FieldsV1,
    /// `ExtraValue`: a message `{1: repeated string}` that is a `[]string` in Go.
    StrList,
    Msg(&'static str),
}

/// One field of a message.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field {
    pub(super) num: u32,
    pub(super) json: &'static str,
    pub(super) inline: bool,
    pub(super) omit_empty: bool,
    pub(super) card: Card,
    pub(super) ty: Ty,
}

/// One protobuf message: its table name (`core.PodSpec`) and its fields.
#[derive(Debug)]
pub(super) struct Message {
    pub(super) name: &'static str,
    pub(super) fields: &'static [Field],
}

/// The whole table, sorted by name.
pub(super) type Schema = [Message];

/// The generated table.
pub(super) fn schema() -> &'static Schema {
    super::messages::MESSAGES
}

/// The fields of message `name`.
pub(super) fn fields_of(schema: &'static Schema, name: &str) -> Result<&'static [Field], ProtoError> {
    schema
        .binary_search_by(|m| m.name.cmp(name))
        .map(|i| schema[i].fields)
        .map_err(|_| ProtoError::Table(format!("unknown message {name}")))
}
