//! OpenAPI v3 component schemas (as k8s-openapi's `schemars` feature makes them) to TypeScript
//! declarations: one interface per component, a kind's `apiVersion` and `kind` as literals,
//! optional fields optional, the first sentence of each description as its doc comment.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::facts::{self, Mapped};
use crate::kinds::Kind;

const REF_PREFIX: &str = "#/components/schemas/";

/// How a kind's object is typed inside another (a StatefulSet's `volumeClaimTemplates`): its
/// `apiVersion`, `kind` and `metadata` are optional there.
pub const EMBEDDED: &str = r#"/**
 * A kind's object inside another (a StatefulSet's `volumeClaimTemplates`), where its
 * `apiVersion`, `kind` and `metadata` may be left out.
 */
export type Embedded<T extends KubeObject> = Omit<T, "apiVersion" | "kind" | "metadata"> & {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
};
"#;

/// Lines are wrapped before this column.
const WIDTH: usize = 100;

/// The component a schema refers to (`$ref`, or a one-element `allOf` of one: a described
/// reference), if it is a reference.
fn ref_name(schema: &Value) -> Option<&str> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return r.strip_prefix(REF_PREFIX);
    }
    match schema.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([only]) => ref_name(only),
        _ => None,
    }
}

/// The TypeScript declarations of `kinds` and every component they use.
pub struct Typings<'a> {
    components: &'a BTreeMap<String, Value>,
    /// The kinds' components.
    kinds: BTreeSet<String>,
    /// Whether a kind is embedded in another component (`Embedded<T>` is then declared).
    pub embeds: bool,
    /// Component → its TypeScript name, for every generated component.
    names: BTreeMap<&'a str, String>,
    /// The mapped components the output uses, by TypeScript name.
    used_mapped: BTreeSet<&'static str>,
    emitted: BTreeSet<&'a str>,
    out: String,
}

impl<'a> Typings<'a> {
    /// Names every component `kinds` reach. Fails with the names that two components, or a
    /// component and a declaration of `ctop.d.ts` (`taken`), would share.
    pub fn new(
        components: &'a BTreeMap<String, Value>,
        kinds: &[Kind],
        taken: &BTreeSet<String>,
    ) -> Result<Self, String> {
        let mut names: BTreeMap<&'a str, String> = BTreeMap::new();
        let mut todo: Vec<&str> = kinds.iter().map(|k| k.schema.as_str()).collect();
        while let Some(name) = todo.pop() {
            if facts::mapped(name).is_some() {
                continue;
            }
            let Some((key, schema)) = components.get_key_value(name) else {
                return Err(format!("no component {name}"));
            };
            if names.contains_key(key.as_str()) {
                continue;
            }
            let ts = facts::RENAMED.iter().find(|(schema, _)| *schema == name).map_or_else(
                || name.rsplit('.').next().unwrap_or(name).to_owned(),
                |(_, ts)| (*ts).to_owned(),
            );
            names.insert(key.as_str(), ts);
            refs(schema, &mut todo);
        }
        let mut clashes = Vec::new();
        let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
        for (schema, ts) in &names {
            if let Some(other) = seen.insert(ts, schema) {
                clashes.push(format!("{ts}: {other} and {schema}"));
            }
            if taken.contains(ts) {
                clashes.push(format!("{ts}: {schema} and ctop.d.ts's own {ts}"));
            }
        }
        if !clashes.is_empty() {
            return Err(format!(
                "two types would have one name (add to facts::RENAMED): {}",
                clashes.join("; ")
            ));
        }
        let kinds = kinds.iter().map(|k| k.schema.clone()).collect();
        Ok(Self {
            components,
            kinds,
            embeds: false,
            names,
            used_mapped: BTreeSet::new(),
            emitted: BTreeSet::new(),
            out: String::new(),
        })
    }

    /// The declarations: each kind's interface followed by the components it uses first, the
    /// handles and their lowerCamel globals. Returns the body, the mapped names it uses, and
    /// whether it embeds a kind in another component (see [`EMBEDDED`]).
    pub fn emit(mut self, kinds: &[Kind]) -> (String, BTreeSet<&'static str>, bool) {
        for k in kinds {
            let _ = write!(self.out, "\n// ─── {} {} ───\n", k.api_version, k.kind);
            self.component(&k.schema, Some(k));
        }
        self.out.push_str("\n// ─── the handles ───\n\n");
        for k in kinds {
            let _ = writeln!(self.out, "export declare const {0}: Kind<{0}>;", k.kind);
        }
        self.out.push_str(
            "\n/**\n * Every built-in kind handle is also a global under its lowerCamel name, so scripts like\n \
             * the WebApp example's `getObserved(secret, ...)` work without importing it.\n */\ndeclare global {\n",
        );
        for k in kinds {
            let _ = writeln!(self.out, "  const {}: typeof {};", lower_camel(k.kind), k.kind);
        }
        self.out.push_str("}\n");
        (self.out, self.used_mapped, self.embeds)
    }

    /// Emits component `name` (a kind's when `kind` is given), then the components it uses
    /// that are not out yet, depth first.
    fn component(&mut self, name: &str, kind: Option<&Kind>) {
        let Some((key, schema)) = self.components.get_key_value(name) else { return };
        if !self.emitted.insert(key.as_str()) {
            return;
        }
        let ts = self.names[key.as_str()].clone();
        self.out.push('\n');
        doc(&mut self.out, "", schema);
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = schema.get("properties").and_then(Value::as_object);
        let Some(properties) = properties else {
            // A component that is not an object of fields: a type alias.
            let ty = self.ty(name, "", schema);
            let _ = writeln!(self.out, "export type {ts} = {ty};");
            self.dependencies(schema);
            return;
        };
        match kind {
            Some(k) => {
                let _ = writeln!(self.out, "export interface {ts} extends KubeObject {{");
                let _ = writeln!(self.out, "  apiVersion: {};", quote(k.api_version));
                let _ = writeln!(self.out, "  kind: {};", quote(k.kind));
            }
            None => {
                let _ = writeln!(self.out, "export interface {ts} {{");
            }
        }
        for (field, prop) in properties {
            // A kind's identity is written above; its metadata is KubeObject's.
            if kind.is_some() && matches!(field.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            doc(&mut self.out, "  ", prop);
            let optional = if required.contains(field.as_str()) { "" } else { "?" };
            let ty = self.ty(name, field, prop);
            let _ = writeln!(self.out, "  {}{optional}: {ty};", property_name(field));
        }
        self.out.push_str("}\n");
        self.dependencies(schema);
    }

    /// Emits the components `schema` refers to, in the order it does.
    fn dependencies(&mut self, schema: &Value) {
        let mut found = Vec::new();
        refs(schema, &mut found);
        // `refs` collects depth first; emit in order of appearance.
        for name in found {
            if self.names.contains_key(name) {
                let name = name.to_owned();
                self.component(&name, None);
            }
        }
    }

    /// The TypeScript type of field `field` of component `owner`.
    fn ty(&mut self, owner: &str, field: &str, schema: &Value) -> String {
        if let Some(values) = facts::enum_of(owner, field, schema) {
            let union = values.iter().map(|v| quote(v)).collect::<Vec<_>>().join(" | ");
            return if schema.get("type").and_then(Value::as_str) == Some("array") {
                format!("({union})[]")
            } else {
                union
            };
        }
        self.plain(schema)
    }

    fn plain(&mut self, schema: &Value) -> String {
        if let Some(name) = ref_name(schema) {
            return match facts::mapped(name) {
                Some(Mapped::Ctop(ts) | Mapped::Alias(ts, _)) => {
                    self.used_mapped.insert(ts);
                    (*ts).to_owned()
                }
                Some(Mapped::Inline(ts)) => (*ts).to_owned(),
                None if self.kinds.contains(name) => {
                    self.embeds = true;
                    format!("Embedded<{}>", self.names[name])
                }
                None => self.names.get(name).cloned().unwrap_or_else(|| "unknown".to_owned()),
            };
        }
        let ty = match schema.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(types)) => {
                types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("")
            }
            _ => "",
        };
        match ty {
            "string" => "string".to_owned(),
            "integer" | "number" => "number".to_owned(),
            "boolean" => "boolean".to_owned(),
            "array" => {
                let item = schema.get("items").map_or_else(|| "unknown".to_owned(), |i| self.plain(i));
                if item.contains(' ') { format!("({item})[]") } else { format!("{item}[]") }
            }
            "object" => match schema.get("additionalProperties") {
                Some(v @ Value::Object(_)) => format!("{{ [key: string]: {} }}", self.plain(v)),
                _ => "{ [key: string]: unknown }".to_owned(),
            },
            _ => "unknown".to_owned(),
        }
    }
}

/// The components `v` refers to, in order of appearance (mapped ones included).
fn refs<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(REF_PREFIX)) {
                out.push(r);
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// `deployment` for `Deployment`.
pub fn lower_camel(kind: &str) -> String {
    let mut chars = kind.chars();
    chars.next().map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// A field's name as a TypeScript property: quoted unless it is an identifier.
fn property_name(field: &str) -> String {
    let ident = field.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident { field.to_owned() } else { quote(field) }
}

/// The doc comment of `schema` at `indent`: the first sentence of its description, and
/// `@deprecated` when the description says it is.
pub fn doc(out: &mut String, indent: &str, schema: &Value) {
    let Some(description) = schema.get("description").and_then(Value::as_str) else { return };
    let mut text = first_sentence(description).replace("*/", "*\\/");
    if text.is_empty() {
        return;
    }
    if description.contains("Deprecated:") || description.starts_with("Deprecated") {
        text.push_str(" @deprecated");
    }
    let one_line = format!("{indent}/** {text} */");
    if one_line.chars().count() <= WIDTH {
        out.push_str(&one_line);
        out.push('\n');
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    let mut line = format!("{indent} *");
    for word in text.split(' ') {
        if line.chars().count() + 1 + word.chars().count() > WIDTH && line.len() > indent.len() + 2 {
            out.push_str(&line);
            out.push('\n');
            line = format!("{indent} *");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    let _ = writeln!(out, "\n{indent} */");
}

/// The first sentence of `text` (its first paragraph's, whitespace collapsed): up to the
/// first `. ` before a capital letter or a quote that ends no abbreviation.
pub fn first_sentence(text: &str) -> String {
    let paragraph = text.trim().split("\n\n").next().unwrap_or_default();
    let flat: String = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut from = 0;
    while let Some(at) = flat[from..].find(". ").map(|i| i + from) {
        let before = &flat[..at];
        let next = flat[at + 2..].chars().next();
        let abbreviation = ["e.g", "i.e", "etc", "vs", "ex", "Ex"]
            .iter()
            .any(|a| before.ends_with(a) && before[..before.len() - a.len()].ends_with([' ', '(']));
        let url = flat[at + 2..].starts_with("http");
        if !abbreviation
            && (url || next.is_some_and(|c| c.is_uppercase() || c == '"' || c == '`' || c == '\''))
        {
            return flat[..=at].to_owned();
        }
        from = at + 2;
    }
    flat
}
