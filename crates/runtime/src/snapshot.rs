//! JavaScript values copied straight into `serde_json::Value`, with `JSON.stringify`'s rules.
//!
//! The SDK's `apply()` and `patch()` snapshot each child when they are called, and the
//! handler's output is read when it returns. Doing both through JSON text meant a
//! `JSON.stringify` in QuickJS and a `serde_json` parse in Rust for every child; walking the
//! value from Rust gives the same `serde_json::Value` at about half the cost (see
//! `benches/script.rs`). [`Snapshots`] is the per-call store behind `__ct_host.snap`; the
//! [`Vm`](crate::vm::Vm) clears it before each dispatch and splices its values into the
//! output.
//!
//! What is copied is what `JSON.stringify` then `JSON.parse` would give: own enumerable string
//! keys, `toJSON()` honoured (dates become strings), `undefined`, functions and symbols left
//! out of objects and `null` in arrays, non-finite numbers `null`, whole numbers as integers.
//! A cycle or nesting deeper than [`MAX_DEPTH`] and `BigInt` values are `TypeError`s, as in
//! `JSON.stringify`.
//!
//! # The budget
//! Every walk counts the Rust heap the copy takes against one budget per call
//! ([`Limits::max_output`](crate::vm::Limits::max_output)), so that what a call leaves outside
//! the script's memory limit is bounded too. The heap of a `serde_json::Value` is far larger
//! than its JSON (`{"a":1}` is 7 bytes of JSON and a 640-byte B-tree node; a ConfigMap child
//! is ~18× its JSON, a Deployment ~24×), so counting JSON bytes let a call hold tens of times
//! its budget. [`cost`] is measured against the allocator (see its docs).

use rquickjs::function::This;
use rquickjs::{Atom, Ctx, Exception, Type, Value};
use serde_json::{Map, Number, Value as Json};

/// Deepest nesting copied; deeper values (or cycles) are refused like a cyclic
/// `JSON.stringify`. The same as `serde_json`'s recursion limit, which bounded the output
/// when it was parsed from text.
pub(crate) const MAX_DEPTH: usize = 128;

/// `JSON.stringify` writes whole numbers below this magnitude as digits (above, with an
/// exponent, which `serde_json` reads as a float).
const DIGITS_BELOW: f64 = 1e21;
/// 2^63 and 2^64, the bounds of `i64` and `u64` as floats.
const I64_END: f64 = 9_223_372_036_854_775_808.0;
const U64_END: f64 = 18_446_744_073_709_551_616.0;

/// Heap bytes of the parts of a copied value, as `serde_json` 1 (without `preserve_order`)
/// allocates them on 64-bit targets; each is at least the allocator's count (checked with
/// dhat for ConfigMaps, Deployments, maps of 100 numbers, arrays of 1,000 numbers and deep
/// nesting: within 10% above).
pub(crate) mod cost {
    /// A `Value` itself (the root; the others live inside their parent's allocation).
    pub(crate) const VALUE: usize = 32;
    /// One B-tree node of a `Map` (11 entries of a 24-byte key and a 32-byte value, plus
    /// links), rounded up.
    pub(crate) const MAP_NODE: usize = 640;
    /// An array's buffer: one `Value` per element plus the allocator's header.
    pub(crate) const fn array(len: usize) -> usize {
        VALUE * len + 16
    }
    /// A string's buffer (empty strings allocate nothing), rounded to 8 plus a header.
    pub(crate) const fn string(len: usize) -> usize {
        if len == 0 { 0 } else { len.div_ceil(8) * 8 + 8 }
    }
    /// The nodes of a map of `len` entries: one up to 11, then about one per 6 (B-tree nodes
    /// are half full after splits).
    pub(crate) const fn map(len: usize) -> usize {
        let nodes = if len == 0 {
            0
        } else if len <= 11 {
            1
        } else {
            len.div_ceil(6)
        };
        nodes * MAP_NODE
    }
}

/// The snapshots of one call and the output budget they share.
#[derive(Debug, Default)]
pub(crate) struct Snapshots {
    /// Each snapshot and the heap bytes it was counted for.
    values: Vec<(Json, usize)>,
    /// Heap bytes copied so far in this call ([`cost`]).
    bytes: usize,
    /// The byte limit, [`Limits::max_output`](crate::vm::Limits::max_output).
    limit: usize,
    /// Set when the budget ran out: the call fails even if the script caught the error.
    overflow: Option<usize>,
    /// Set when the SDK found more children than the limit: the call fails, caught or not.
    too_many: bool,
}

impl Snapshots {
    /// Forgets the previous call and sets this call's budget.
    pub(crate) fn reset(&mut self, limit: usize) {
        self.values.clear();
        self.bytes = 0;
        self.limit = limit;
        self.overflow = None;
        self.too_many = false;
    }

    /// Marks this call as over the children limit.
    pub(crate) fn mark_too_many(&mut self) {
        self.too_many = true;
    }

    /// Whether this call went over the children limit.
    pub(crate) fn too_many(&self) -> bool {
        self.too_many
    }

    /// The heap bytes that went over the budget in this call, if they did.
    pub(crate) fn overflow(&self) -> Option<usize> {
        self.overflow
    }

    /// Copies `value`, setting `metadata.namespace` to `namespace` when it is missing or null,
    /// and returns the snapshot's index.
    pub(crate) fn push<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        value: &Value<'js>,
        namespace: Option<String>,
    ) -> rquickjs::Result<u32> {
        let before = self.bytes;
        let mut json = self.copy(ctx, value)?;
        if let Some(namespace) = namespace
            && let Some(metadata) = json.get_mut("metadata").and_then(Json::as_object_mut)
            && metadata.get("namespace").is_none_or(Json::is_null)
        {
            self.bytes += cost::string(namespace.len()) + cost::string("namespace".len());
            metadata.insert("namespace".to_owned(), Json::String(namespace));
        }
        let index = u32::try_from(self.values.len())
            .map_err(|_| Exception::throw_range(ctx, "snapshot: too many objects in one call"))?;
        self.values.push((json, self.bytes - before));
        Ok(index)
    }

    /// Takes snapshot `index` out of the store (a second take gives `None`).
    pub(crate) fn take(&mut self, index: usize) -> Option<Json> {
        self.values.get_mut(index).map(|(v, _)| std::mem::take(v)).filter(|v| !v.is_null())
    }

    /// Frees snapshot `index` (a later `apply()` of the same child replaced it) and gives
    /// its bytes back to the budget.
    pub(crate) fn release(&mut self, index: usize) {
        if let Some((value, bytes)) = self.values.get_mut(index) {
            *value = Json::Null;
            self.bytes = self.bytes.saturating_sub(std::mem::take(bytes));
        }
    }

    /// Copies `value` against this call's budget.
    pub(crate) fn copy<'js>(&mut self, ctx: &Ctx<'js>, value: &Value<'js>) -> rquickjs::Result<Json> {
        let to_json = Atom::from_str(ctx.clone(), "toJSON")?;
        let mut walk = Walk { ctx, to_json, bytes: self.bytes + cost::VALUE, limit: self.limit };
        let result = walk.value(value, Key::Name(""), 0).map(|v| v.unwrap_or(Json::Null));
        self.bytes = walk.bytes;
        if walk.bytes > walk.limit {
            self.overflow = Some(walk.bytes);
        }
        result
    }
}

/// One copy in progress.
struct Walk<'a, 'js> {
    ctx: &'a Ctx<'js>,
    /// The atom `toJSON`, looked up on every object: made once per copy, not per object.
    to_json: Atom<'js>,
    bytes: usize,
    limit: usize,
}

/// The key a value is copied under: what its `toJSON(key)` is given, written out only then
/// (an array element's index is not formatted for every element).
#[derive(Clone, Copy)]
enum Key<'k> {
    Name(&'k str),
    Index(usize),
}

impl<'js> Walk<'_, 'js> {
    fn count(&mut self, bytes: usize) -> rquickjs::Result<()> {
        self.bytes += bytes;
        if self.bytes > self.limit {
            return Err(Exception::throw_range(
                self.ctx,
                &format!("the handler's output takes more than its {}-byte memory budget", self.limit),
            ));
        }
        Ok(())
    }

    /// The JSON of `value` under `key`, or `None` where `JSON.stringify` leaves the property
    /// out. An object's `toJSON(key)` is called first and its result taken as it is.
    fn value(&mut self, value: &Value<'js>, key: Key<'_>, depth: usize) -> rquickjs::Result<Option<Json>> {
        if depth > MAX_DEPTH {
            return Err(Exception::throw_type(
                self.ctx,
                &format!(
                    "cannot convert to JSON: the value is cyclic or nested deeper than {MAX_DEPTH} levels"
                ),
            ));
        }
        if let Some(object) = value.as_object()
            && !value.is_function()
        {
            let to_json: Value<'js> = object.get(self.to_json.clone())?;
            if let Some(f) = to_json.as_function() {
                let replaced: Value<'js> = match key {
                    Key::Name(name) => f.call((This(value.clone()), name))?,
                    Key::Index(i) => f.call((This(value.clone()), i.to_string()))?,
                };
                return self.serialize(&replaced, depth);
            }
        }
        self.serialize(value, depth)
    }

    /// [`Walk::value`] after `toJSON`.
    fn serialize(&mut self, value: &Value<'js>, depth: usize) -> rquickjs::Result<Option<Json>> {
        // Scalars live inside their parent's allocation (counted there).
        let json = match value.type_of() {
            Type::Null => Json::Null,
            Type::Bool => Json::Bool(value.as_bool().unwrap_or_default()),
            Type::Int => Json::from(value.as_int().unwrap_or_default()),
            Type::Float => number(value.as_float().unwrap_or(f64::NAN)),
            Type::String => {
                let text = value.as_string().map(|s| s.to_string()).transpose()?.unwrap_or_default();
                self.count(cost::string(text.len()))?;
                Json::String(text)
            }
            Type::BigInt => {
                return Err(Exception::throw_type(self.ctx, "cannot convert to JSON: a BigInt value"));
            }
            Type::Array | Type::Object | Type::Exception | Type::Proxy | Type::Promise => {
                return self.plain(value, depth);
            }
            // undefined, functions, symbols and engine-internal values have no JSON form.
            _ => return Ok(None),
        };
        Ok(Some(json))
    }

    /// An array or object, element by element.
    fn plain(&mut self, value: &Value<'js>, depth: usize) -> rquickjs::Result<Option<Json>> {
        if let Some(array) = value.as_array() {
            self.count(cost::array(array.len()))?;
            let mut items = Vec::with_capacity(array.len());
            for (i, item) in array.iter::<Value<'js>>().enumerate() {
                let item = item?;
                items.push(self.value(&item, Key::Index(i), depth + 1)?.unwrap_or(Json::Null));
            }
            return Ok(Some(Json::Array(items)));
        }
        let Some(object) = value.as_object() else {
            return Ok(None);
        };
        let mut map = Map::new();
        for prop in object.props::<String, Value<'js>>() {
            let (key, item) = prop?;
            if let Some(json) = self.value(&item, Key::Name(&key), depth + 1)? {
                // One more node every time the entry count crosses a node boundary.
                self.count(cost::map(map.len() + 1) - cost::map(map.len()) + cost::string(key.len()))?;
                map.insert(key, json);
            }
        }
        Ok(Some(Json::Object(map)))
    }
}

/// A JS number as serde reads `JSON.stringify(x)`: whole numbers written as digits are
/// integers, non-finite ones `null`.
fn number(x: f64) -> Json {
    if !x.is_finite() {
        return Json::Null;
    }
    // A whole number in range converts exactly: it is what serde reads from the digits.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if x.fract() == 0.0 && x.abs() < DIGITS_BELOW {
        if (0.0..U64_END).contains(&x) {
            return Json::from(x as u64);
        }
        if (-I64_END..0.0).contains(&x) {
            return Json::from(x as i64);
        }
    }
    Number::from_f64(x).map_or(Json::Null, Json::Number)
}
