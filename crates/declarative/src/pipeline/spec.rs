//! From a controller's `pipeline` value to its [`Stage`]s, in either serialisation:
//! the list form (`[{"@join": …}, {"@project": …}, …]`, or one stage alone) and the
//! tagged releases' form (`{"@join": …, "@aggregate": [{"@select": …}, …]}`).

use serde_json::Value;

use super::Stage;
use crate::error::{Error, Result};
use crate::expr::Expr;

/// Parses the stages; `sources` are the source kinds, as the join names them.
pub(super) fn parse(spec: &Value, sources: &[String]) -> Result<Vec<Stage>> {
    let parse_err = |path: &str, message: String| Error::Parse { path: path.to_string(), message };
    let mut stages = Vec::new();
    match spec {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                stages.push(stage(item, &format!("pipeline[{i}]"))?);
            }
        }
        Value::Object(map)
            if map.contains_key("@aggregate") || (map.len() == 1 && map.contains_key("@join")) =>
        {
            for key in map.keys() {
                if key != "@join" && key != "@aggregate" {
                    return Err(parse_err(
                        "pipeline",
                        format!("unknown key {key:?} next to @join/@aggregate"),
                    ));
                }
            }
            if let Some(join) = map.get("@join") {
                stages.push(Stage::Join(Expr::parse(join, "pipeline.@join")?));
            }
            match map.get("@aggregate") {
                None => {}
                Some(Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        stages.push(stage(item, &format!("pipeline.@aggregate[{i}]"))?);
                    }
                }
                Some(_) => {
                    return Err(parse_err("pipeline.@aggregate", "expected a list of stages".to_string()));
                }
            }
        }
        Value::Object(_) => stages.push(stage(spec, "pipeline")?),
        _ => return Err(parse_err("pipeline", "expected a list of stages or a single stage".to_string())),
    }
    for (i, s) in stages.iter().enumerate().skip(1) {
        if let Stage::Join(e) = s {
            return Err(parse_err(e.path(), format!("@join must be the first stage, it is stage {i}")));
        }
    }
    if sources.len() > 1 && !matches!(stages.first(), Some(Stage::Join(_))) {
        return Err(parse_err(
            "pipeline",
            format!("a controller with {} sources must start its pipeline with @join", sources.len()),
        ));
    }
    Ok(stages)
}

fn stage(item: &Value, path: &str) -> Result<Stage> {
    let err = |message: String| Error::Parse { path: path.to_string(), message };
    let Some((name, arg)) = item.as_object().filter(|m| m.len() == 1).and_then(|m| m.iter().next()) else {
        return Err(err(
            "a stage is a map with a single key: @join, @select, @project, @unwind or @gather".to_string()
        ));
    };
    let path = format!("{path}.{name}");
    let expr = Expr::parse(arg, &path)?;
    let needs_path = |e: &Expr, what: &str| match e.as_path() {
        Some(p) if !p.subject && p.parsed.is_ok() => Ok(()),
        _ => Err(Error::Parse {
            path: e.path().to_string(),
            message: format!("{what} must be a JSONPath such as \"$.spec.items\""),
        }),
    };
    Ok(match name.as_str() {
        "@join" => Stage::Join(expr),
        "@select" => Stage::Select(expr),
        "@project" => Stage::Project(expr),
        "@unwind" | "@demux" => {
            needs_path(&expr, "the argument of @unwind")?;
            Stage::Unwind(expr)
        }
        "@gather" | "@mux" => {
            let [key, value] = expr.items() else {
                return Err(Error::Parse {
                    path,
                    message: "expected [key expression, JSONPath of the value]".to_string(),
                });
            };
            needs_path(value, "the second argument of @gather")?;
            Stage::Gather { key: key.clone(), value: value.clone() }
        }
        other => return Err(err(format!("unknown stage {other:?}"))),
    })
}
