//! CRD-time checks of `x-kubernetes-validations`, from
//! `ValidateCustomResourceDefinitionOpenAPISchema` in
//! `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go` and
//! `compileRule` in `.../apiserver/schema/cel/compilation.go`: the rule's own fields
//! (schema errors), then, when the schema at and below the node has no errors, rules and
//! message expressions that do not compile and transition rules where `oldSelf` cannot
//! correlate (CEL errors, reported after the schema errors).

use kube_cel::cel::Program;
use kube_cel::cel::parser::ParseErrors;
use serde_json::Value;

use super::field_path;
use crate::access::{get, index, list};
use crate::cause::{Bad, Cause, invalid, not_supported, required};
use crate::go::quote;

/// The reasons a rule may give (`supportedValidationReason`, sorted as Go lists them).
const REASONS: [&str; 4] =
    ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

/// cel-go's `Issues.String()` of parse errors: `ERROR: <input>:L:C: msg`, then the
/// source line and a `^` under the column, each line prefixed with ` | `.
pub(crate) fn go_issues(e: &ParseErrors) -> String {
    e.errors
        .iter()
        .map(|p| {
            let mut s = format!("ERROR: <input>:{}:{}: {}", p.pos.0, p.pos.1, p.msg);
            let line = p.source_info.as_ref().and_then(|info| info.snippet(p.pos.0 - 1));
            if let Some(line) = line {
                let dots = ".".repeat(usize::try_from(p.pos.1 - 1).unwrap_or(0));
                s.push_str(&format!("\n | {}\n | {dots}^", line.replace('\t', " ")));
            }
            s
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Go's `%#v` of the internal `apiextensions.ValidationRule`, the value the server shows
/// for a rule that does not compile. A set `reason` or `optionalOldSelf` is a pointer,
/// which Go prints as its address; a fixed stand-in is shown here.
fn go_rule(rule: &Value) -> String {
    let s = |k: &str| quote(get(rule, k).and_then(Value::as_str).unwrap_or_default());
    let reason = if get(rule, "reason").is_some_and(|r| !r.is_null()) {
        "(*apiextensions.FieldValueErrorReason)(0xc000000000)"
    } else {
        "(*apiextensions.FieldValueErrorReason)(nil)"
    };
    let oos = if get(rule, "optionalOldSelf").is_some_and(|r| !r.is_null()) {
        "(*bool)(0xc000000000)"
    } else {
        "(*bool)(nil)"
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{oos}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        s("fieldPath"),
    )
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// The schema errors of the `x-kubernetes-validations` of node `s` at `path`.
pub(crate) fn rule_fields(s: &Value, path: &str, out: &mut Vec<Cause>) {
    for (i, rule) in list(s, "x-kubernetes-validations").iter().enumerate() {
        let at = |k: &str| format!("{}.{k}", index(&format!("{path}.x-kubernetes-validations"), i));
        let text = |k: &str| get(rule, k).and_then(Value::as_str).unwrap_or_default();
        let (r, msg, msg_expr, fp) =
            (text("rule"), text("message"), text("messageExpression"), text("fieldPath"));
        if r.trim().is_empty() {
            out.push(required(&at("rule"), "rule is not specified"));
        } else if !msg.is_empty() && msg.trim().is_empty() {
            out.push(invalid(&at("message"), Bad::Str(msg.into()), "message must be non-empty if specified"));
        } else if has_newlines(msg.trim()) {
            out.push(invalid(&at("message"), Bad::Str(msg.into()), "message must not contain line breaks"));
        } else if has_newlines(r.trim()) && msg.trim().is_empty() {
            out.push(required(&at("message"), "message must be specified if rule contains line breaks"));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            out.push(required(&at("messageExpression"), "messageExpression must be non-empty if specified"));
        }
        if let Some(reason) = get(rule, "reason").and_then(Value::as_str)
            && !REASONS.contains(&reason)
        {
            let valid: Vec<String> = REASONS.iter().map(|r| (*r).to_owned()).collect();
            out.push(not_supported(&at("reason"), Bad::Str(reason.into()), &valid));
        }
        if !fp.is_empty() && fp.trim().is_empty() {
            out.push(invalid(
                &at("fieldPath"),
                Bad::Str(fp.into()),
                "fieldPath must be non-empty if specified",
            ));
        }
        if has_newlines(fp) {
            out.push(invalid(
                &at("fieldPath"),
                Bad::Str(fp.into()),
                "fieldPath must not contain line breaks",
            ));
        }
        if !fp.is_empty() && field_path::normalize(fp, s).is_err() {
            out.push(invalid(&at("fieldPath"), Bad::Str(fp.into()), "fieldPath must be a valid path"));
        }
    }
}

/// The CEL errors of the rules of node `s` at `path`: rules and message expressions
/// that do not compile, and transition rules below `uncorrelatable` (the path of the
/// nearest list that is not `x-kubernetes-list-type: map`), where `oldSelf` has no value
/// to correlate with.
pub(crate) fn compile_errors(s: &Value, path: &str, uncorrelatable: Option<&str>, out: &mut Vec<Cause>) {
    for (i, rule) in list(s, "x-kubernetes-validations").iter().enumerate() {
        let at = |k: &str| format!("{}.{k}", index(&format!("{path}.x-kubernetes-validations"), i));
        let text = |k: &str| get(rule, k).and_then(Value::as_str).unwrap_or_default();
        let source = text("rule");
        if source.trim().is_empty() {
            continue;
        }
        match Program::compile(source) {
            Err(e) => {
                let detail = format!("compilation failed: {}", go_issues(&e));
                out.push(invalid(&at("rule"), Bad::Raw(go_rule(rule)), &detail));
                continue;
            }
            Ok(p) => {
                let optional = get(rule, "optionalOldSelf").and_then(Value::as_bool).unwrap_or(false);
                if p.references().has_variable("oldSelf")
                    && !optional
                    && let Some(u) = uncorrelatable
                {
                    let detail = format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"
                    );
                    out.push(invalid(&at("rule"), Bad::Str(source.into()), &detail));
                }
            }
        }
        let msg_expr = text("messageExpression");
        if !msg_expr.is_empty()
            && let Err(e) = Program::compile(msg_expr)
        {
            let detail = format!("messageExpression compilation failed: {}", go_issues(&e));
            out.push(invalid(&at("messageExpression"), Bad::Raw(go_rule(rule)), &detail));
        }
    }
}
