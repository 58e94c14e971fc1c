//! Masking secrets out of a call's record before it is written (FORMAT.md, "Redaction").
//!
//! `mask(x)` is an `[A-Za-z0-9]` string as long as `x`, drawn from HMAC-SHA256 under a
//! random key that lives only in this process: equal secrets get equal masks throughout a
//! recording (a token read back as a Secret's `data` is masked as it was written into
//! `stringData`), and nobody without the key can test a guess against a mask. HMAC is
//! written here on `sha2` (RFC 2104, a dozen lines) rather than taken from `hmac` or `ring`,
//! which are not dependencies of the workspace.
//!
//! Runs on the writer thread, never on the reconcile path.

use base64::Engine as _;
use ctop_core::Answer;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::json::{join_array, split_array};
use crate::types::{CallRecord, CallResult, TapeEntry};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/// Secret values at least this long are also replaced wherever else they appear in a call.
const MIN_SECRET: usize = 8;
/// `randomString` answers at least this long are replaced wherever else they appear in a
/// call (random, so a shorter one than a secret is unlikely to match by chance; a name
/// suffix copied into a child's name must be masked there too for the replay to match).
const MIN_RANDOM: usize = 4;
/// Request headers whose values are never recorded.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

/// HMAC-SHA256 (RFC 2104) of `msg` under `key` (at most 64 bytes).
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > block.len() {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let ipad = block.map(|b| b ^ 0x36);
    let opad = block.map(|b| b ^ 0x5c);
    let inner = Sha256::new().chain_update(ipad).chain_update(msg).finalize();
    Sha256::new().chain_update(opad).chain_update(inner).finalize().into()
}

/// Masks under one recording's key.
pub(crate) struct Masker {
    key: [u8; 32],
}

impl Masker {
    /// A fresh random key.
    pub(crate) fn new() -> Self {
        Self { key: rand::random() }
    }

    #[cfg(test)]
    pub(crate) fn with_key(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// The mask of a text: as many characters as it has.
    pub(crate) fn mask(&self, text: &str) -> String {
        self.mask_bytes(text.as_bytes(), text.chars().count())
    }

    /// `len` characters drawn from HMAC(key, `bytes`): SHA-256 of the HMAC and a counter,
    /// bytes below 248 taken modulo 62 (no bias).
    fn mask_bytes(&self, bytes: &[u8], len: usize) -> String {
        let seed = hmac_sha256(&self.key, bytes);
        let mut out = String::with_capacity(len);
        let mut counter = 0u32;
        while out.len() < len {
            let block = Sha256::new().chain_update(seed).chain_update(counter.to_le_bytes()).finalize();
            for b in block {
                if b < 248 && out.len() < len {
                    out.push(char::from(ALPHABET[usize::from(b % 62)]));
                }
            }
            counter += 1;
        }
        out
    }

    /// The mask of a Secret's `data` value: base64 of the mask of what it encodes.
    fn mask_data(&self, value: &str) -> String {
        let masked = match B64.decode(value.as_bytes()) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => self.mask(&text),
                Err(e) => self.mask_bytes(e.as_bytes(), e.as_bytes().len()),
            },
            Err(_) => self.mask(value),
        };
        B64.encode(masked)
    }
}

/// Originals replaced by their masks in every string of one call.
#[derive(Default)]
struct Table {
    pairs: Vec<(String, String)>,
}

impl Table {
    /// `original` → `mask`, and the same in base64, if `original` is at least `min` bytes.
    fn add(&mut self, original: &str, mask: &str, min: usize) {
        if original.len() >= min {
            self.pairs.push((original.to_owned(), mask.to_owned()));
            self.pairs.push((B64.encode(original), B64.encode(mask)));
        }
    }

    /// `original` → `mask` alone, if `original` is at least `min` bytes.
    fn add_one(&mut self, original: &str, mask: &str, min: usize) {
        if original.len() >= min {
            self.pairs.push((original.to_owned(), mask.to_owned()));
        }
    }

    /// Longest first (a secret that contains another is replaced whole), once each.
    fn finish(&mut self) {
        self.pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        self.pairs.dedup_by(|a, b| a.0 == b.0);
    }

    /// `s` with every original replaced; `None` when none occurs.
    fn replace(&self, s: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for (original, mask) in &self.pairs {
            let cur = out.as_deref().unwrap_or(s);
            if cur.contains(original.as_str()) {
                out = Some(cur.replace(original.as_str(), mask));
            }
        }
        out
    }

    /// Whether JSON text may hold an original (its longest run of characters that no JSON
    /// encoder escapes occurs in it; an original without such a run always may).
    fn may_occur_in(&self, json: &str) -> bool {
        self.pairs.iter().any(|(original, _)| {
            let probe = original
                .split(|c: char| {
                    !(c == ' ' || c.is_ascii_graphic()) || matches!(c, '"' | '\\' | '<' | '>' | '&' | '/')
                })
                .max_by_key(|run| run.len())
                .unwrap_or("");
            (probe.len() < 4 && probe.len() < original.len()) || json.contains(probe)
        })
    }
}

/// Mask `call` in place: every `v1` Secret's `stringData` and `data`, `randomString`
/// answers, credential headers of `fetch` requests, then every original of 8 bytes or more
/// (4 for `randomString` answers) wherever else it appears in the call.
pub(crate) fn redact(call: &mut CallRecord, masker: &Masker) {
    let mut table = Table::default();
    if let Some(text) = &mut call.object {
        mask_secrets_in_text(text, masker, &mut table);
    }
    for entry in &mut call.tape {
        match entry {
            TapeEntry::List { answer: Some(text), .. } | TapeEntry::Get { answer: Some(Some(text)), .. } => {
                mask_secrets_in_text(text, masker, &mut table);
            }
            TapeEntry::Supply { source, init, answer: Answer::Text(text), .. } => match source.as_str() {
                "randomString" => {
                    let mask = masker.mask(text);
                    table.add(text, &mask, MIN_RANDOM);
                    *text = mask;
                }
                "fetch" => {
                    if let Some(init) = init {
                        mask_credentials(init);
                    }
                    mask_secrets_in_text(text, masker, &mut table);
                }
                _ => {}
            },
            TapeEntry::List { answer: None, .. } | TapeEntry::Get { .. } | TapeEntry::Supply { .. } => {}
        }
    }
    if let CallResult::Outcome(v) = &mut call.result {
        mask_secrets(v, masker, &mut table);
    }
    table.finish();
    if table.pairs.is_empty() {
        return;
    }
    if let Some(text) = &mut call.object {
        replace_in_json(text, &table);
    }
    for entry in &mut call.tape {
        match entry {
            TapeEntry::List { answer: Some(text), .. } | TapeEntry::Get { answer: Some(Some(text)), .. } => {
                replace_in_json(text, &table);
            }
            TapeEntry::Supply { detail, init, answer, .. } => {
                for s in [detail.as_mut(), init.as_mut()].into_iter().flatten() {
                    replace_in_json(s, &table);
                }
                if let Answer::Text(t) = answer {
                    replace_in_json(t, &table);
                }
            }
            TapeEntry::List { answer: None, .. } | TapeEntry::Get { .. } => {}
        }
    }
    match &mut call.result {
        CallResult::Outcome(v) => {
            replace_in_value(v, &table);
        }
        CallResult::Failure { message, frame, .. } => {
            replace_in_place(message, &table);
            if let Some(f) = frame {
                replace_in_place(&mut f.source_line, &table);
            }
        }
    }
}

/// Mask the Secrets in JSON `text` (a list answer item by item, so that the others keep
/// their text); text that is not JSON or names no Secret is left as it is.
fn mask_secrets_in_text(text: &mut String, masker: &Masker, table: &mut Table) {
    if !text.contains("\"Secret\"") {
        return;
    }
    if let Some(items) = split_array(text) {
        let mut changed = false;
        let items: Vec<String> = items
            .into_iter()
            .map(|item| {
                let mut item = item.to_owned();
                changed |= rewrite_json(&mut item, |v| mask_secrets(v, masker, table));
                item
            })
            .collect();
        if changed {
            *text = join_array(&items);
        }
    } else {
        rewrite_json(text, |v| mask_secrets(v, masker, table));
    }
}

/// Parse `text`, let `f` change it, write it back if `f` says it did; whether it did.
fn rewrite_json(text: &mut String, f: impl FnOnce(&mut Value) -> bool) -> bool {
    let Ok(mut v) = serde_json::from_str::<Value>(text) else { return false };
    if !f(&mut v) {
        return false;
    }
    match serde_json::to_string(&v) {
        Ok(t) => {
            *text = t;
            true
        }
        Err(_) => false,
    }
}

/// Mask every `v1` Secret in `v` (at any depth); whether any was.
fn mask_secrets(v: &mut Value, masker: &Masker, table: &mut Table) -> bool {
    match v {
        Value::Object(map) => {
            let mut changed = false;
            if is_secret(map) {
                if let Some(Value::Object(d)) = map.get_mut("stringData") {
                    for value in d.values_mut() {
                        if let Value::String(s) = value {
                            let mask = masker.mask(s);
                            table.add(s, &mask, MIN_SECRET);
                            *s = mask;
                            changed = true;
                        }
                    }
                }
                if let Some(Value::Object(d)) = map.get_mut("data") {
                    for value in d.values_mut() {
                        if let Value::String(s) = value {
                            let mask = masker.mask_data(s);
                            match (decode_text(s), decode_text(&mask)) {
                                // Adds the base64 forms too.
                                (Some(original), Some(masked)) => table.add(&original, &masked, MIN_SECRET),
                                _ => table.add_one(s, &mask, MIN_SECRET),
                            }
                            *s = mask;
                            changed = true;
                        }
                    }
                }
            }
            for child in map.values_mut() {
                changed |= mask_secrets(child, masker, table);
            }
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, item| mask_secrets(item, masker, table) | c),
        _ => false,
    }
}

/// The UTF-8 text base64 `s` encodes.
fn decode_text(s: &str) -> Option<String> {
    String::from_utf8(B64.decode(s.as_bytes()).ok()?).ok()
}

fn is_secret(map: &Map<String, Value>) -> bool {
    map.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && map.get("kind").and_then(Value::as_str) == Some("Secret")
}

/// `fetch`'s request options with the values of credential headers replaced by
/// `<redacted>` (headers as an object or as `[name, value]` pairs).
fn mask_credentials(init: &mut String) {
    let is_credential = |name: &str| CREDENTIAL_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name));
    rewrite_json(init, |v| {
        let mut changed = false;
        match v.get_mut("headers") {
            Some(Value::Object(headers)) => {
                for (name, value) in headers.iter_mut() {
                    if is_credential(name) {
                        *value = Value::from("<redacted>");
                        changed = true;
                    }
                }
            }
            Some(Value::Array(pairs)) => {
                for pair in pairs.iter_mut() {
                    if let Some([Value::String(name), value]) = pair.as_array_mut().map(Vec::as_mut_slice)
                        && is_credential(name)
                    {
                        *value = Value::from("<redacted>");
                        changed = true;
                    }
                }
            }
            _ => {}
        }
        changed
    });
}

/// Replace the originals in JSON `text` (in its strings and keys; in the whole text when
/// it is not JSON), leaving a text without any as it is.
fn replace_in_json(text: &mut String, table: &Table) {
    if !table.may_occur_in(text) {
        return;
    }
    let Ok(mut v) = serde_json::from_str::<Value>(text) else {
        replace_in_place(text, table);
        return;
    };
    if replace_in_value(&mut v, table)
        && let Ok(t) = serde_json::to_string(&v)
    {
        *text = t;
    }
}

fn replace_in_place(s: &mut String, table: &Table) {
    if let Some(r) = table.replace(s) {
        *s = r;
    }
}

/// Replace the originals in every string and key of `v`; whether any was.
fn replace_in_value(v: &mut Value, table: &Table) -> bool {
    match v {
        Value::String(s) => table.replace(s).map(|r| *s = r).is_some(),
        Value::Array(items) => items.iter_mut().fold(false, |c, item| replace_in_value(item, table) | c),
        Value::Object(map) => {
            let mut changed = false;
            if map.keys().any(|k| table.replace(k).is_some()) {
                let old = std::mem::take(map);
                for (k, val) in old {
                    map.insert(table.replace(&k).unwrap_or(k), val);
                }
                changed = true;
            }
            map.values_mut().fold(changed, |c, val| replace_in_value(val, table) | c)
        }
        _ => false,
    }
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
