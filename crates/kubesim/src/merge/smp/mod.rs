//! Strategic merge patch: what kube-apiserver does with a PATCH whose content type is
//! `application/strategic-merge-patch+json` on a built-in kind (`kubectl patch`, and the
//! patch that client-side `kubectl apply` computes and sends).
//!
//! Start at [`strategic_merge`]: it takes the live object, the patch and the kind's
//! [`Shape`], and returns the patched object or an [`SmpError`] whose text is the one the
//! real server puts in its `Status` (see [`SmpError::code`] for the HTTP status).
//!
//! The semantics follow `k8s.io/apimachinery/pkg/util/strategicpatch` (the server-side
//! `StrategicMergeMapPatch` path, recent releases):
//!
//! * maps merge key by key; `null` deletes a key; scalars replace;
//! * lists are replaced unless the shape says otherwise: `MergeByKey` lists merge items by
//!   the key (unmatched patch items are added), `MergePrimitives` lists are unioned;
//! * result order: items named in the patch keep the patch's relative order, items only in
//!   the live list keep theirs, and the two are interleaved by live position; a new item
//!   follows the patch item before it, or comes first when there is none (so a patch
//!   adding one container puts it at the front); `$setElementOrder/<field>` sets the
//!   order of the items it names;
//! * directives: `$patch: replace | delete` on a map, `$patch: replace | delete` as a list
//!   item, `$retainKeys`, `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`.
//!
//! Faithful quirks worth knowing: `$patch: delete` on a map leaves an empty map `{}` (the
//! typed decode then drops it for `omitempty` fields); values the patch *adds* (the key is
//! not in the live object) lose every map carrying a `$patch` key and every `null` entry;
//! a `$deleteFromPrimitiveList` for a list the object does not have is a no-op. Go walks
//! a patch map in random order; here plain fields are applied before deletion lists, which
//! is also what happens when `$setElementOrder` accompanies them. Directive keys that the
//! Go code would leave for the typed decode to drop are removed here, so no directive ever
//! reaches the result.

use ctop_schema::go::{float as go_float, percent_v as go_v};
use serde_json::{Map, Value};

use crate::merge::shape::{MergeStrategy, Shape};

type Obj = Map<String, Value>;

const DIRECTIVE_MARKER: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_PREFIX: &str = "$deleteFromPrimitiveList";
const ORDER_PREFIX: &str = "$setElementOrder";
const GO_LIST: &str = "[]interface {}";
const GO_MAP: &str = "map[string]interface {}";

/// Why a strategic merge patch was rejected. The `Display` text is the real server's
/// message; [`SmpError::code`], [`SmpError::reason`] and [`SmpError::status_message`] give
/// the rest of the `Status` the real server answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmpError {
    /// The patch body is JSON but not an object (an array, string, number or bool); the
    /// field holds Go's JSON kind name. 400 BadRequest.
    #[error("json: cannot unmarshal {0} into Go value of type map[string]interface {{}}")]
    PatchNotObject(&'static str),
    /// The original document is not a JSON object (`mergepatch.ErrBadJSONDoc`). 400.
    #[error("invalid JSON document")]
    BadJsonDoc,
    /// A merged list holds lists (`ErrNoListOfLists`). 422 Invalid.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// A key starting with `$deleteFromPrimitiveList` is not `$deleteFromPrimitiveList/<field>`. 400.
    #[error("invalid patch format of primitive list")]
    BadPrimitiveListFormat,
    /// `$retainKeys` is not a list, or the patch sets a field the list does not name. 400.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeysFormat,
    /// A key starting with `$setElementOrder` is not `$setElementOrder/<field>`. 400.
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrderFormat,
    /// A `$patch` value other than `replace`/`delete` on a map (this includes `merge`), or
    /// other than `replace`/`delete`/`merge` on a list item. 500.
    #[error("unknown patch type: {directive} in map: {map}")]
    UnknownPatchType {
        /// The directive value, as Go's `%s` prints it.
        directive: String,
        /// The map carrying it, as Go's `%v` prints it.
        map: String,
    },
    /// A list item says `$patch: merge`. 500.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    /// An item of a merge-by-key list (or of a `$setElementOrder` list) lacks the key. 500.
    #[error("map: {map} does not contain declared merge key: {key}")]
    MissingMergeKey {
        /// The item, as Go's `%v` prints it.
        map: String,
        /// The merge key.
        key: String,
    },
    /// The patch list's items are not in the relative order of `$setElementOrder`. 500.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    OrderMismatch {
        /// The patch list, as Go's `%v` prints it.
        patch: String,
        /// The `$setElementOrder` list, as Go's `%v` prints it.
        order: String,
    },
    /// A value has the wrong JSON type for where it is (e.g. `$setElementOrder/x: "a"`,
    /// or a scalar item in a merge-by-key list); fields are Go type names. 500.
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        /// The Go type that was expected.
        expected: &'static str,
        /// The Go type that was found.
        actual: &'static str,
    },
    /// The items of a merged list (live and patch together) differ in JSON type. 500.
    #[error("list element types are not identical: {0}")]
    MixedElementTypes(String),
    /// `$setElementOrder` names a list that is empty or absent on both sides. 500.
    #[error("no elements in any of the given slices")]
    NoElements,
    /// Objects were found in a list that has no merge key (a primitives list, or a
    /// `$deleteFromPrimitiveList` on a list of objects); holds the element kind. 500.
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyDeclared(&'static str),
    /// A `$setElementOrder` list for a merge-by-key list has a non-object at this index. 500.
    #[error("value for key {0} is not a map.")]
    NotAMap(usize),
}

impl SmpError {
    /// The HTTP status the real API server answers with: 400 for malformed directives and
    /// bodies, 422 for lists of lists, 500 for everything the server does not classify.
    #[must_use]
    pub fn code(&self) -> u16 {
        match self {
            Self::PatchNotObject(_)
            | Self::BadJsonDoc
            | Self::BadPrimitiveListFormat
            | Self::BadRetainKeysFormat
            | Self::BadSetElementOrderFormat => 400,
            Self::ListOfLists => 422,
            _ => 500,
        }
    }

    /// The `Status.reason`: `BadRequest`, `Invalid`, or empty (`StatusReasonUnknown`).
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self.code() {
            400 => "BadRequest",
            422 => "Invalid",
            _ => "",
        }
    }

    /// The `Status.message`. It is the error text, except for 422, where the server wraps
    /// the error in a generic response that keeps only a fixed sentence.
    #[must_use]
    pub fn status_message(&self) -> String {
        if self.code() == 422 {
            "the server rejected our request due to an error in our request".to_owned()
        } else {
            self.to_string()
        }
    }
}

/// Whether `key` is a strategic-merge directive rather than a field: `$patch`,
/// `$retainKeys`, or one starting with `$setElementOrder` or `$deleteFromPrimitiveList`.
#[must_use]
pub fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS
        || key.starts_with(ORDER_PREFIX)
        || key.starts_with(DELETE_PREFIX)
}

/// Applies the strategic merge `patch` to `original` (both JSON objects; a `null` patch
/// changes nothing), consulting `shape` for each list's merge strategy.
///
/// # Errors
/// An [`SmpError`] when the patch is malformed in a way the real server rejects.
pub fn strategic_merge(original: &Value, patch: &Value, shape: &dyn Shape) -> Result<Value, SmpError> {
    let Value::Object(original) = original else {
        return Err(SmpError::BadJsonDoc);
    };
    let patch = match patch {
        Value::Object(p) => p.clone(),
        Value::Null => Obj::new(),
        Value::Array(_) => return Err(SmpError::PatchNotObject("array")),
        Value::String(_) => return Err(SmpError::PatchNotObject("string")),
        Value::Number(_) => return Err(SmpError::PatchNotObject("number")),
        Value::Bool(_) => return Err(SmpError::PatchNotObject("bool")),
    };
    Merger { shape }.merge_map(&[], original.clone(), patch).map(Value::Object)
}

/// The Go dynamic type a decoded JSON value has (`int64` and `float64` differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    Int,
    Float,
    Str,
    Slice,
    Map,
}

fn go_type(v: &Value) -> GoType {
    match v {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        Value::Number(n) if n.is_i64() => GoType::Int,
        Value::Number(_) => GoType::Float,
        Value::String(_) => GoType::Str,
        Value::Array(_) => GoType::Slice,
        Value::Object(_) => GoType::Map,
    }
}

fn go_type_name(v: &Value) -> &'static str {
    match go_type(v) {
        GoType::Nil => "%!s(<nil>)",
        GoType::Bool => "bool",
        GoType::Int => "int64",
        GoType::Float => "float64",
        GoType::Str => "string",
        GoType::Slice => GO_LIST,
        GoType::Map => GO_MAP,
    }
}

struct Merger<'a> {
    shape: &'a dyn Shape,
}

impl Merger<'_> {
    /// The merge key of the list at `path` ("" when it has none) and the Go element kind
    /// named when objects turn up in a list without one.
    fn list_meta(&self, path: &[String]) -> (MergeStrategy, String, &'static str) {
        let p: Vec<&str> = path.iter().map(String::as_str).collect();
        let strategy = self.shape.merge_strategy(&p);
        match &strategy {
            MergeStrategy::MergeByKey(k) => {
                let k = k.clone();
                (strategy, k, "struct")
            }
            MergeStrategy::MergePrimitives => (strategy, String::new(), "string"),
            MergeStrategy::Replace => (strategy, String::new(), "struct"),
        }
    }

    fn merge_map(&self, path: &[String], mut original: Obj, mut patch: Obj) -> Result<Obj, SmpError> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER).cloned() {
            return match directive.as_str() {
                Some("replace") => {
                    patch.remove(DIRECTIVE_MARKER);
                    Ok(strip_map(patch))
                }
                Some("delete") => Ok(Obj::new()),
                _ => Err(SmpError::UnknownPatchType {
                    directive: go_s(&directive),
                    map: go_v(&Value::Object(patch)),
                }),
            };
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.apply_set_element_order(path, &mut original, &mut patch)?;
        let (deletions, fields): (Vec<_>, Vec<_>) =
            patch.into_iter().partition(|(k, _)| k.starts_with(DELETE_PREFIX));
        for (key, value) in fields {
            self.merge_field(path, &mut original, key, value, false)?;
        }
        for (key, value) in deletions {
            let field = extract_key(&key, DELETE_PREFIX)?;
            self.merge_field(path, &mut original, field, value, true)?;
        }
        Ok(original)
    }

    /// One patch entry into `original`; `is_delete` when it came from a
    /// `$deleteFromPrimitiveList/<field>` key.
    fn merge_field(
        &self,
        path: &[String],
        original: &mut Obj,
        field: String,
        value: Value,
        is_delete: bool,
    ) -> Result<(), SmpError> {
        if value.is_null() {
            original.remove(&field);
            return Ok(());
        }
        let child = child_path(path, &field);
        let merged = match (original.remove(&field), value) {
            (Some(Value::Object(o)), Value::Object(p)) => Some(Value::Object(self.merge_map(&child, o, p)?)),
            (Some(Value::Array(o)), Value::Array(p)) => {
                Some(Value::Array(self.merge_list(&child, o, p, is_delete)?))
            }
            // Same scalar type: replaced (Go does this even for a deletion list).
            (Some(o), p) if go_type(&o) == go_type(&p) => remove_directives(p),
            // A deletion list for a missing or differently typed field changes nothing.
            (current, _) if is_delete => current,
            // New key or changed type: the patch value, without nulls and directives.
            (_, mut p) => {
                discard_nulls(&mut p);
                remove_directives(p)
            }
        };
        if let Some(v) = merged {
            original.insert(field, v);
        }
        Ok(())
    }

    fn merge_list(
        &self,
        path: &[String],
        original: Vec<Value>,
        patch: Vec<Value>,
        is_delete: bool,
    ) -> Result<Vec<Value>, SmpError> {
        let (strategy, key, elem) = self.list_meta(path);
        if strategy == MergeStrategy::Replace && !is_delete {
            return Ok(strip_vec(patch));
        }
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = element_type(&[&original, &patch])?;
        let (original, patch, merged) = if kind == GoType::Map {
            if key.is_empty() {
                return Err(SmpError::NoMergeKeyDeclared(elem));
            }
            let (original, patch) = apply_special_items(original, patch, &key)?;
            let merged = self.merge_items(path, original.clone(), &patch, &key)?;
            (original, patch, merged)
        } else {
            if is_delete {
                return Ok(original.into_iter().filter(|v| !patch.contains(v)).collect());
            }
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for v in original.iter().chain(&patch) {
                if !merged.contains(v) {
                    merged.push(v.clone());
                }
            }
            (original, patch, merged)
        };
        let (items, server_only) = partition(merged, &patch, &key)?;
        normalize_element_order(items, server_only, &patch, &original, &key, kind)
    }

    /// Merges plain (directive-free) patch items into `original` by `key`; unmatched items
    /// are appended.
    fn merge_items(
        &self,
        path: &[String],
        mut original: Vec<Value>,
        patch: &[Value],
        key: &str,
    ) -> Result<Vec<Value>, SmpError> {
        for item in patch {
            let Some(obj) = item.as_object() else {
                return Err(bad_arg(GO_MAP, item));
            };
            let Some(wanted) = obj.get(key) else {
                return Err(missing_key(item, key));
            };
            match find_by_key(&original, key, wanted)? {
                Some(i) => {
                    if let Value::Object(current) = &mut original[i] {
                        let taken = std::mem::take(current);
                        *current = self.merge_map(path, taken, obj.clone())?;
                    }
                }
                None => original.push(strip(item.clone())),
            }
        }
        Ok(original)
    }

    /// Handles every `$setElementOrder/<field>` of `patch`, together with the patch's
    /// `<field>` list, which it consumes.
    fn apply_set_element_order(
        &self,
        path: &[String],
        original: &mut Obj,
        patch: &mut Obj,
    ) -> Result<(), SmpError> {
        let keys: Vec<String> = patch.keys().filter(|k| k.starts_with(ORDER_PREFIX)).cloned().collect();
        for directive in keys {
            let order = match patch.remove(&directive) {
                Some(Value::Array(order)) => order,
                Some(other) => return Err(bad_arg(GO_LIST, &other)),
                None => continue,
            };
            let field = extract_key(&directive, ORDER_PREFIX)?;
            let live = list_at(original, &field)?;
            let patched = list_at(patch, &field)?;
            let child = child_path(path, &field);
            let (_, key, _) = self.list_meta(&child);
            validate_order(patched.as_deref().unwrap_or_default(), &order, &key)?;
            let merged = match (live.clone(), patched.clone()) {
                (Some(live), None) => live,
                (None, Some(patched)) => remove_directives_vec(patched),
                (Some(live), Some(patched)) => self.merge_list(&child, live, patched, false)?,
                (None, None) => continue,
            };
            let (items, server_only) = partition(merged, &order, &key)?;
            let live = live.unwrap_or_default();
            let kind = element_type(&[&live, patched.as_deref().unwrap_or_default()])?;
            let ordered = normalize_element_order(items, server_only, &order, &live, &key, kind)?;
            original.insert(field.clone(), Value::Array(ordered));
            patch.remove(&field);
        }
        Ok(())
    }
}

fn child_path(path: &[String], field: &str) -> Vec<String> {
    let mut child = path.to_vec();
    child.push(field.to_owned());
    child
}

fn extract_key(key: &str, prefix: &str) -> Result<String, SmpError> {
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field.to_owned()),
        _ if prefix == DELETE_PREFIX => Err(SmpError::BadPrimitiveListFormat),
        _ => Err(SmpError::BadSetElementOrderFormat),
    }
}

fn bad_arg(expected: &'static str, actual: &Value) -> SmpError {
    SmpError::BadArgType { expected, actual: go_type_name(actual) }
}

fn missing_key(item: &Value, key: &str) -> SmpError {
    SmpError::MissingMergeKey { map: go_v(item), key: key.to_owned() }
}

/// The list at `field` of `map`, if present; an error if present but not a list.
fn list_at(map: &Obj, field: &str) -> Result<Option<Vec<Value>>, SmpError> {
    match map.get(field) {
        None => Ok(None),
        Some(Value::Array(list)) => Ok(Some(list.clone())),
        Some(other) => Err(bad_arg(GO_LIST, other)),
    }
}

/// `$retainKeys`: validates the patch against the list and clears unlisted live keys.
fn apply_retain_keys(original: &mut Obj, patch: &mut Obj) -> Result<(), SmpError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(SmpError::BadRetainKeysFormat);
    };
    let listed = |k: &str| retain.iter().any(|v| v.as_str() == Some(k));
    let unlisted = patch.iter().any(|(k, v)| {
        !v.is_null() && !k.starts_with(DELETE_PREFIX) && !k.starts_with(ORDER_PREFIX) && !listed(k)
    });
    if unlisted {
        return Err(SmpError::BadRetainKeysFormat);
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// Splits `$patch` items off a merge-by-key patch list: deletes remove live items,
/// `replace` makes the remaining patch items the whole list. Returns the new live list and
/// the plain patch items.
fn apply_special_items(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE_MARKER).cloned() else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(wanted) = item.get(key) else {
                    return Err(missing_key(&item, key));
                };
                while let Some(i) = find_by_key(&original, key, wanted)? {
                    original.remove(i);
                }
            }
            Some("replace") => replace = true,
            Some("merge") => return Err(SmpError::MergeDirectiveInList),
            _ => {
                return Err(SmpError::UnknownPatchType { directive: go_s(&directive), map: go_v(&item) });
            }
        }
    }
    if replace { Ok((strip_vec(plain), Vec::new())) } else { Ok((original, plain)) }
}

/// The index of the first object in `list` whose `key` equals `wanted`.
fn find_by_key(list: &[Value], key: &str, wanted: &Value) -> Result<Option<usize>, SmpError> {
    for (i, item) in list.iter().enumerate() {
        let Some(obj) = item.as_object() else {
            return Err(SmpError::NotAMap(i));
        };
        if obj.get(key) == Some(wanted) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// The common Go type of all items, rejecting lists of lists and mixed types.
fn element_type(lists: &[&[Value]]) -> Result<GoType, SmpError> {
    let mut seen = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        let t = go_type(item);
        match seen {
            None if t == GoType::Slice => return Err(SmpError::ListOfLists),
            None => seen = Some(t),
            Some(prev) if prev != t => {
                let all: Vec<String> = lists.iter().map(|l| go_v_list(l)).collect();
                return Err(SmpError::MixedElementTypes(format!("[{}]", all.join(" "))));
            }
            Some(_) => {}
        }
    }
    seen.ok_or(SmpError::NoElements)
}

/// Splits `merged` into the items present in `by` (by merge key, or by value when `key` is
/// empty) and the others, keeping their order.
fn partition(merged: Vec<Value>, by: &[Value], key: &str) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for item in merged {
        let found = if key.is_empty() {
            by.contains(&item)
        } else {
            let Some(obj) = item.as_object() else {
                return Err(bad_arg(GO_MAP, &item));
            };
            let Some(wanted) = obj.get(key) else {
                return Err(missing_key(&item, key));
            };
            find_by_key(by, key, wanted)?.is_some()
        };
        if found { present.push(item) } else { absent.push(item) }
    }
    Ok((present, absent))
}

/// Sorts the patch items by `patch_order` and the live-only items by `live_order`, then
/// interleaves them: a live-only item goes first only when both are live items and it
/// comes earlier in the live list.
fn normalize_element_order(
    items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    live_order: &[Value],
    key: &str,
    kind: GoType,
) -> Result<Vec<Value>, SmpError> {
    let items = normalize_slice_order(items, patch_order, key, kind)?;
    let server_only = normalize_slice_order(server_only, live_order, key, kind)?;
    let live_position = |v: Value| (position(live_order, &v, key, kind), v);
    let mut out = Vec::with_capacity(items.len() + server_only.len());
    let mut left = server_only.into_iter().map(live_position).peekable();
    let mut right = items.into_iter().map(live_position).peekable();
    while let (Some((l, _)), Some((r, _))) = (left.peek(), right.peek()) {
        let live_first = matches!((l, r), (Some(i), Some(j)) if i < j);
        let next = if live_first { left.next() } else { right.next() };
        out.extend(next.map(|(_, v)| v));
    }
    out.extend(left.map(|(_, v)| v));
    out.extend(right.map(|(_, v)| v));
    Ok(out)
}

/// Stable-sorts `to_sort` by position in `order` (Go's `sort.SliceStable` with the same
/// comparison, which calls unknown items "less"); `$patch: delete` items go last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    key: &str,
    kind: GoType,
) -> Result<Vec<Value>, SmpError> {
    let (sorted, deletes): (Vec<Value>, Vec<Value>) = if kind == GoType::Map {
        for item in to_sort.iter().chain(order) {
            let Some(obj) = item.as_object() else {
                return Err(bad_arg(GO_MAP, item));
            };
            if !obj.contains_key(key) {
                return Err(missing_key(item, key));
            }
        }
        to_sort.into_iter().partition(|v| !is_delete_item(v))
    } else {
        (to_sort, Vec::new())
    };
    let mut keyed: Vec<(Option<usize>, Value)> =
        sorted.into_iter().map(|v| (position(order, &v, key, kind), v)).collect();
    let less = |a: Option<usize>, b: Option<usize>| match (a, b) {
        (Some(i), Some(j)) => i < j,
        _ => true,
    };
    // Insertion sort: exactly what Go's stable sort does for lists of up to 20 items.
    for i in 1..keyed.len() {
        let mut j = i;
        while j > 0 && less(keyed[j].0, keyed[j - 1].0) {
            keyed.swap(j, j - 1);
            j -= 1;
        }
    }
    Ok(keyed.into_iter().map(|(_, v)| v).chain(deletes).collect())
}

fn is_delete_item(v: &Value) -> bool {
    v.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete")
}

/// Index of `item` in `list`: by merge-key value for objects (a missing key matches a
/// missing key, as Go's nil == nil), by value otherwise.
fn position(list: &[Value], item: &Value, key: &str, kind: GoType) -> Option<usize> {
    fn key_of<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
        v.as_object().and_then(|m| m.get(key))
    }
    if kind == GoType::Map {
        let wanted = key_of(item, key);
        list.iter().position(|v| key_of(v, key) == wanted)
    } else {
        list.iter().position(|v| v == item)
    }
}

/// Checks that the patch list's plain items appear in `$setElementOrder` in the same
/// relative order.
fn validate_order(patch: &[Value], order: &[Value], key: &str) -> Result<(), SmpError> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let mut plain = Vec::with_capacity(patch.len());
    for item in patch {
        if !key.is_empty() {
            if !item.is_object() {
                return Err(bad_arg(GO_MAP, item));
            }
            if is_delete_item(item) {
                continue;
            }
        }
        plain.push(item);
    }
    let (mut pi, mut si) = (0, 0);
    while pi < plain.len() && si < order.len() {
        if plain[pi].get(DIRECTIVE_MARKER).is_some() {
            pi += 1;
            continue;
        }
        if key_value_equal(plain[pi], &order[si], key)? {
            pi += 1;
        }
        si += 1;
    }
    if pi < plain.len() {
        return Err(SmpError::OrderMismatch { patch: go_v_list(patch), order: go_v_list(order) });
    }
    Ok(())
}

fn key_value_equal(left: &Value, right: &Value, key: &str) -> Result<bool, SmpError> {
    if key.is_empty() {
        return Ok(left == right);
    }
    let lookup = |v: &Value| -> Result<Value, SmpError> {
        let Some(obj) = v.as_object() else {
            return Err(bad_arg(GO_MAP, v));
        };
        obj.get(key).cloned().ok_or_else(|| missing_key(v, key))
    };
    Ok(lookup(left)? == lookup(right)?)
}

/// What the Go code does to values it takes from the patch as they are: maps carrying
/// `$patch` are dropped; the remaining directive keys (left by Go for the typed decode to
/// discard) are removed. `None` when the value itself is dropped.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) if m.contains_key(DIRECTIVE_MARKER) => None,
        Value::Object(m) => Some(Value::Object(
            m.into_iter()
                .filter(|(k, _)| !is_directive_key(k))
                .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                .collect(),
        )),
        Value::Array(a) => Some(Value::Array(remove_directives_vec(a))),
        other => Some(other),
    }
}

fn remove_directives_vec(a: Vec<Value>) -> Vec<Value> {
    a.into_iter().filter_map(remove_directives).collect()
}

/// Removes directive keys (including `$patch`) at every depth, keeping everything else:
/// what the typed decode leaves of a raw patch value.
fn strip(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(strip_map(m)),
        Value::Array(a) => Value::Array(strip_vec(a)),
        other => other,
    }
}

fn strip_map(m: Obj) -> Obj {
    m.into_iter().filter(|(k, _)| !is_directive_key(k)).map(|(k, v)| (k, strip(v))).collect()
}

fn strip_vec(a: Vec<Value>) -> Vec<Value> {
    a.into_iter().map(strip).collect()
}

/// Drops `null` map entries at every depth (list items that are `null` stay).
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Go's `%v` of a list (`[a b]`).
fn go_v_list(a: &[Value]) -> String {
    let parts: Vec<String> = a.iter().map(go_v).collect();
    format!("[{}]", parts.join(" "))
}

/// Go's `%s` of a decoded JSON value: strings as they are, other scalars as `%!s(T=v)`.
fn go_s(v: &Value) -> String {
    fn nested(v: &Value) -> String {
        match v {
            Value::Null => "<nil>".to_owned(),
            Value::Bool(b) => format!("%!s(bool={b})"),
            Value::Number(n) => match n.as_i64() {
                Some(i) => format!("%!s(int64={i})"),
                None => format!("%!s(float64={})", go_float(n.as_f64().unwrap_or_default())),
            },
            Value::String(s) => s.clone(),
            Value::Array(a) => {
                let parts: Vec<String> = a.iter().map(nested).collect();
                format!("[{}]", parts.join(" "))
            }
            Value::Object(m) => {
                let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", nested(v))).collect();
                format!("map[{}]", parts.join(" "))
            }
        }
    }
    match v {
        Value::Null => "%!s(<nil>)".to_owned(),
        other => nested(other),
    }
}

#[cfg(test)]
mod tests;
