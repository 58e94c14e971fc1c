//! `x-kubernetes-validations`: CEL rules compiled once per CRD ([`CelRules::compile`])
//! and evaluated on every create and update of its custom resources
//! ([`CelRules::validate`]), as `apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go`
//! does. Parsing and evaluation are the `cel` crate's, with the Kubernetes function
//! libraries of `kube-cel`; this module walks the schema beside the data, binds `self`
//! (and `oldSelf` on update where the old value correlates), and words the failures as
//! the server does. CRD-time checks of the rules themselves live in [`crd`].
//!
//! What differs from the server: no cost budget (no rule fails for its cost), rules are
//! only parsed, not type-checked (a type error shows up when the rule runs, as an
//! evaluation error), and runtime error texts come from the `cel` crate (a few common
//! ones are reworded as cel-go words them).

pub(crate) mod crd;
mod field_path;
mod value;

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_cel::KubeCelExt as _;
use kube_cel::cel::objects::OptionalValue;
use kube_cel::cel::{Context, ExecutionError, Program, Value as Cel};
use serde_json::Value;

use crate::access::{
    EMBEDDED, MAP_TYPE, addl_schema, child, get, index, items, key, list, prop, s_str, s_type,
};
use crate::cause::{Bad, Cause, duplicate, forbidden, invalid, required};
use crate::validate::correlate_item;

/// The compiled `x-kubernetes-validations` of one CRD version's schema. Cheap to share
/// (`Arc` inside); build it when the CRD is stored, not on every write.
#[derive(Clone, Debug, Default)]
pub struct CelRules {
    root: Option<Arc<Node>>,
}

/// The rules at one schema node and the nodes below it that have rules.
#[derive(Debug)]
struct Node {
    /// The node's schema, which types `self`.
    schema: Value,
    /// `type` of the node, the value shown in `Invalid value: "<type>"`.
    type_name: String,
    resource_root: bool,
    rules: Vec<Rule>,
    properties: BTreeMap<String, Node>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    all_of: Vec<Node>,
}

/// One compiled rule.
#[derive(Debug)]
struct Rule {
    source: String,
    message: String,
    program: Result<Program, String>,
    message_expression: Option<Program>,
    reason: Option<String>,
    field_path: Option<String>,
    uses_old_self: bool,
    optional_old_self: bool,
}

impl Rule {
    /// `ruleErrorString`: the trimmed message, else the trimmed rule.
    fn error_string(&self) -> &str {
        if self.message.is_empty() { self.source.trim() } else { &self.message }
    }
}

/// Compiles `rule` (the `x-kubernetes-validations` entry) against `schema`.
fn compile_rule(rule: &Value, schema: &Value) -> Rule {
    let text = |k: &str| get(rule, k).and_then(Value::as_str).unwrap_or_default();
    let source = text("rule").to_owned();
    let program = Program::compile(&source).map_err(|e| crd::go_issues(&e));
    let uses_old_self = program.as_ref().is_ok_and(|p| p.references().has_variable("oldSelf"));
    let message_expression = Some(text("messageExpression").trim())
        .filter(|m| !m.is_empty())
        .and_then(|m| Program::compile(m).ok());
    let field_path =
        Some(text("fieldPath")).filter(|f| !f.is_empty()).and_then(|f| field_path::normalize(f, schema).ok());
    Rule {
        message: text("message").trim().to_owned(),
        program,
        message_expression,
        reason: get(rule, "reason").and_then(Value::as_str).map(str::to_owned),
        field_path,
        uses_old_self,
        optional_old_self: get(rule, "optionalOldSelf").and_then(Value::as_bool).unwrap_or(false),
        source,
    }
}

/// The validator of `s` and below, or `None` when nothing there has rules
/// (`cel.NewValidator` returns nil then).
fn compile_node(s: &Value, resource_root: bool) -> Option<Node> {
    let rules: Vec<Rule> = list(s, "x-kubernetes-validations").iter().map(|r| compile_rule(r, s)).collect();
    let mut properties = BTreeMap::new();
    for (k, p) in s.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let embedded = get(p, EMBEDDED).and_then(Value::as_bool).unwrap_or(false);
        if let Some(n) = compile_node(p, embedded) {
            properties.insert(k.clone(), n);
        }
    }
    let nested = |sub: Option<&Value>| {
        sub.and_then(|x| compile_node(x, get(x, EMBEDDED).and_then(Value::as_bool).unwrap_or(false)))
            .map(Box::new)
    };
    let items = nested(items(s));
    let additional = nested(addl_schema(s));
    // allOf rules apply to the same value, typed by the node's own schema.
    let all_of: Vec<Node> = list(s, "allOf")
        .iter()
        .filter_map(|a| {
            let rules: Vec<Rule> =
                list(a, "x-kubernetes-validations").iter().map(|r| compile_rule(r, s)).collect();
            (!rules.is_empty()).then(|| Node {
                schema: s.clone(),
                type_name: s_type(s).to_owned(),
                resource_root,
                rules,
                properties: BTreeMap::new(),
                items: None,
                additional: None,
                all_of: Vec::new(),
            })
        })
        .collect();
    if rules.is_empty()
        && properties.is_empty()
        && items.is_none()
        && additional.is_none()
        && all_of.is_empty()
    {
        return None;
    }
    Some(Node {
        schema: s.clone(),
        type_name: s_type(s).to_owned(),
        resource_root,
        rules,
        properties,
        items,
        additional,
        all_of,
    })
}

/// Where the ratcheting of CEL errors stands (`ratchetingOptions`): the old value
/// correlated with this node, if any, and whether the nearest correlated ancestor is
/// unchanged. A rule that does not use `oldSelf` and fails on an unchanged value is a
/// warning, not an error.
#[derive(Clone, Copy)]
struct Ratchet<'a> {
    old: Option<&'a Value>,
    root: bool,
    parent_unchanged: bool,
}

impl<'a> Ratchet<'a> {
    fn applies(&self, new: &Value) -> bool {
        match self.old {
            Some(old) => old == new,
            None => self.parent_unchanged,
        }
    }

    fn key(&self, new_here: &Value, k: &str) -> Ratchet<'a> {
        let Some(old) = self.old else { return *self };
        if self.root && (k == "apiVersion" || k == "kind") {
            return Ratchet { old: None, root: false, parent_unchanged: false };
        }
        Ratchet { old: old.get(k), root: false, parent_unchanged: old == new_here }
    }

    fn index(&self, new_here: &Value, item: Option<&'a Value>) -> Ratchet<'a> {
        let Some(old) = self.old else { return *self };
        Ratchet { old: item, root: false, parent_unchanged: old == new_here }
    }
}

/// The outcome of [`CelRules::validate`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CelOutcome {
    /// The 422 causes, in the server's words.
    pub causes: Vec<Cause>,
    /// Failures ratcheted into warnings (the value did not change since the old object).
    pub warnings: Vec<String>,
}

thread_local! {
    /// The CEL environment with the Kubernetes libraries, built once per thread.
    static BASE: Context<'static> = Context::default().with_all();
}

impl CelRules {
    /// Compiles every `x-kubernetes-validations` rule of `schema` (an `openAPIV3Schema`).
    /// Rules that do not compile are kept and reported when they would run (the CRD
    /// itself is refused by [`crate::check_structural`]).
    #[must_use]
    pub fn compile(schema: &Value) -> CelRules {
        CelRules { root: compile_node(schema, true).map(Arc::new) }
    }

    /// Whether the schema has any rule at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// The cause the server gives instead of running the rules when the causes found so
    /// far (their `reason`s) block them
    /// (`hasBlockingErr` in `registry/customresource/strategy.go`): after a type, required,
    /// enum, too-long or too-many error.
    #[must_use]
    pub fn blocking_cause<'a>(reasons: impl IntoIterator<Item = &'a str>) -> Option<Cause> {
        use crate::cause::{
            FIELD_VALUE_NOT_SUPPORTED, FIELD_VALUE_REQUIRED, FIELD_VALUE_TOO_LONG, FIELD_VALUE_TOO_MANY,
            FIELD_VALUE_TYPE_INVALID,
        };
        let blocking = [
            FIELD_VALUE_NOT_SUPPORTED,
            FIELD_VALUE_REQUIRED,
            FIELD_VALUE_TOO_LONG,
            FIELD_VALUE_TOO_MANY,
            FIELD_VALUE_TYPE_INVALID,
        ];
        let mut reasons = reasons.into_iter();
        reasons.any(|r| blocking.contains(&r)).then(|| {
            let detail = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";
            invalid("<nil>", Bad::Data(Value::Null), detail)
        })
    }

    /// Evaluates the rules on a pruned, defaulted and schema-valid custom resource `new`
    /// (`old` on update), returning the causes and the ratcheted warnings. Transition
    /// rules (those using `oldSelf`) run only where an old value correlates: object
    /// fields, map values and `x-kubernetes-list-type: map` items by key; or, with
    /// `optionalOldSelf`, always, with `oldSelf` an optional.
    #[must_use]
    pub fn validate(&self, new: &Value, old: Option<&Value>) -> CelOutcome {
        let mut out = CelOutcome::default();
        if let Some(root) = &self.root {
            let ratchet = Ratchet { old, root: true, parent_unchanged: false };
            BASE.with(|ctx| root.validate(ctx, "", new, old, ratchet, &mut out));
        }
        out
    }
}

/// `field.Path.String()`: `<nil>` for the root.
fn shown(path: &str) -> &str {
    if path.is_empty() { "<nil>" } else { path }
}

impl Node {
    fn validate<'a>(
        &self,
        ctx: &Context<'_>,
        path: &str,
        x: &'a Value,
        old: Option<&'a Value>,
        ratchet: Ratchet<'a>,
        out: &mut CelOutcome,
    ) {
        if x.is_null() {
            return;
        }
        self.expressions(ctx, path, x, old, ratchet, out);
        for a in &self.all_of {
            let r = Ratchet { old: None, root: false, parent_unchanged: ratchet.parent_unchanged };
            a.expressions(ctx, path, x, old, r, out);
        }
        match x {
            Value::Array(arr) => {
                let Some(is) = &self.items else { return };
                for (i, v) in arr.iter().enumerate() {
                    let old_item = correlate_item(&self.schema, v, old);
                    is.validate(ctx, &index(path, i), v, old_item, ratchet.index(x, old_item), out);
                }
            }
            Value::Object(m) => {
                // Every map type correlates (`MapIsCorrelatable`).
                let correlatable =
                    matches!(s_str(&self.schema, MAP_TYPE), None | Some("granular" | "atomic"));
                let old_at = |k: &str| old.filter(|_| correlatable).and_then(|o| o.get(k));
                for (k, v) in m {
                    if let Some(p) = self.properties.get(k) {
                        p.validate(ctx, &child(path, k), v, old_at(k), ratchet.key(x, k), out);
                    } else if let Some(a) =
                        self.additional.as_ref().filter(|_| prop(&self.schema, k).is_none())
                    {
                        a.validate(ctx, &key(path, k), v, old_at(k), ratchet.key(x, k), out);
                    }
                }
            }
            _ => {}
        }
    }

    /// `validateExpressions`: the node's own rules.
    fn expressions(
        &self,
        ctx: &Context<'_>,
        path: &str,
        x: &Value,
        old: Option<&Value>,
        ratchet: Ratchet<'_>,
        out: &mut CelOutcome,
    ) {
        if self.rules.is_empty() {
            return;
        }
        let here = shown(path);
        let bad = || Bad::Str(self.type_name.clone());
        let mut scope = ctx.new_inner_scope();
        scope.add_variable_from_value("self", value::to_cel(x, Some(&self.schema), self.resource_root));
        let old_cel = old.map(|o| value::to_cel(o, Some(&self.schema), self.resource_root));
        for rule in &self.rules {
            let program = match &rule.program {
                Ok(p) => p,
                Err(e) => {
                    out.causes.push(invalid(
                        here,
                        bad(),
                        &format!("rule compile error: compilation failed: {e}"),
                    ));
                    continue;
                }
            };
            if rule.source.trim().is_empty()
                || (rule.uses_old_self && old.is_none() && !rule.optional_old_self)
            {
                continue;
            }
            let mut rule_scope = scope.new_inner_scope();
            if rule.optional_old_self {
                let opt = match &old_cel {
                    Some(o) => OptionalValue::of(o.clone()),
                    None => OptionalValue::none(),
                };
                rule_scope.add_variable_from_value("oldSelf", Cel::Opaque(Arc::new(opt)));
            } else if let Some(o) = &old_cel {
                rule_scope.add_variable_from_value("oldSelf", o.clone());
            }
            let detail = match program.execute(&rule_scope) {
                Ok(Cel::Bool(true)) => continue,
                Ok(Cel::Bool(false)) => None,
                Ok(other) => Some(format!(
                    "rule did not evaluate to a bool (got {}) evaluating rule: {}",
                    other.type_of(),
                    rule.error_string()
                )),
                Err(e) => Some(eval_error(&e, rule.error_string())),
            };
            if let Some(d) = detail {
                out.causes.push(invalid(here, bad(), &d));
                continue;
            }
            let field = match &rule.field_path {
                Some(f) if path.is_empty() => f.clone(),
                Some(f) => format!("{path}.{f}"),
                None => here.to_owned(),
            };
            let detail = rule
                .message_expression
                .as_ref()
                .and_then(|m| match m.execute(&rule_scope) {
                    Ok(Cel::String(s)) => Some(s.trim().to_owned()),
                    _ => None,
                })
                .filter(|m| !m.is_empty() && !m.contains('\n'))
                .unwrap_or_else(|| {
                    if rule.message.is_empty() {
                        format!("failed rule: {}", rule.error_string())
                    } else {
                        rule.message.clone()
                    }
                });
            let c = match rule.reason.as_deref() {
                Some("FieldValueForbidden") => forbidden(&field, &detail),
                Some("FieldValueRequired") => required(&field, &detail),
                Some("FieldValueDuplicate") => duplicate(&field, bad()),
                _ => invalid(&field, bad(), &detail),
            };
            if !rule.uses_old_self && ratchet.applies(x) {
                out.warnings.push(c.error_string());
            } else {
                out.causes.push(c);
            }
        }
    }
}

/// The detail of a rule whose evaluation failed, as `validateExpressions` words it; the
/// `cel` crate's error texts are reworded where cel-go's are known.
fn eval_error(e: &ExecutionError, rule: &str) -> String {
    let text = match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload => {
            return format!(
                "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule}"
            );
        }
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        other => other.to_string(),
    };
    format!("{text} evaluating rule: {rule}")
}

#[cfg(test)]
mod tests;
