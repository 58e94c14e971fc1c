//! A test's `env:`, the script's `Env` for that test, as `values:` is its `Values`: a
//! mapping of names to strings. In `ctop run` and `ctop dev` the script's `Env` holds the
//! process variables named `CTOP_ENV_<NAME>`, as `<NAME>` (`ctop_runtime::ENV_PREFIX`); a
//! test names the variables as the script reads them, and gets exactly those.
//!
//! ```yaml
//! env:
//!   REGION: eu-west-1      # the script reads Env.REGION
//!   REPLICAS: "3"          # a string, as every environment variable is
//! ```

use std::collections::BTreeMap;

use serde_json::Value;

/// One variable of a test's `env:` mapping: its name checked, its value as the string the
/// script reads.
pub fn variable(name: &str, value: Value) -> Result<String, String> {
    check_name(name)?;
    match value {
        Value::String(s) => Ok(s),
        Value::Number(_) | Value::Bool(_) => Err(format!(
            "env: {name}: {value} is not a string; quote it (\"{value}\"): the script's Env holds only strings, as the environment does"
        )),
        other => Err(format!(
            "env: {name}: expected a string, got {}",
            match other {
                Value::Null => "nothing (null)",
                Value::Array(_) => "a list",
                _ => "a mapping",
            }
        )),
    }
}

/// A name the script can read as `Env.<name>`, and `ctop run` can be given as the process
/// variable `CTOP_ENV_<name>`.
fn check_name(name: &str) -> Result<(), String> {
    if let Some(bare) = name.strip_prefix(ctop_runtime::ENV_PREFIX) {
        return Err(format!(
            "env: {name}: name the variable as the script reads it (Env.{bare}), without the {} prefix that ctop run's environment needs",
            ctop_runtime::ENV_PREFIX
        ));
    }
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(format!("env: {name:?} cannot name an environment variable (empty, or with '=' or NUL)"));
    }
    Ok(())
}

/// The script's `Env` as the runtime takes it: the test's, else the process's `CTOP_ENV_*`
/// variables (what `ctop run` would give it).
pub fn value(env: Option<&BTreeMap<String, String>>) -> Value {
    match env {
        Some(env) => Value::Object(env.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect()),
        None => ctop_runtime::script_env(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn env(v: Value) -> Result<BTreeMap<String, String>, String> {
        let raw: BTreeMap<String, Value> = serde_json::from_value(v).expect("a mapping");
        raw.into_iter().map(|(k, v)| variable(&k, v).map(|s| (k, s))).collect()
    }

    #[test]
    fn names_and_strings() {
        let e = env(json!({"REGION": "eu", "EMPTY": ""})).expect("valid");
        assert_eq!(value(Some(&e)), json!({"REGION": "eu", "EMPTY": ""}));
        assert_eq!(
            env(json!({"REPLICAS": 3})).expect_err("a number"),
            "env: REPLICAS: 3 is not a string; quote it (\"3\"): the script's Env holds only strings, as the environment does"
        );
        assert_eq!(
            env(json!({"A": null})).expect_err("null"),
            "env: A: expected a string, got nothing (null)"
        );
        assert_eq!(env(json!({"A": ["x"]})).expect_err("list"), "env: A: expected a string, got a list");
        assert_eq!(
            env(json!({"CTOP_ENV_REGION": "eu"})).expect_err("prefixed"),
            "env: CTOP_ENV_REGION: name the variable as the script reads it (Env.REGION), without the CTOP_ENV_ prefix that ctop run's environment needs"
        );
        assert!(env(json!({"A=B": "x"})).expect_err("=").contains("cannot name an environment variable"));
    }
}
