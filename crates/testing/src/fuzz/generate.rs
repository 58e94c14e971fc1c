//! TEMPORARY stand-in until the generator lands.
#![allow(missing_docs, clippy::missing_docs_in_private_items)]
use super::rng::Rng;
use serde_json::{Value, json};
pub struct Invalid {
    pub value: Value,
    pub path: String,
    pub rule: String,
}
pub fn valid(schema: &Value, rng: &mut Rng) -> Value {
    let mut o = serde_json::Map::new();
    if let Some(props) = schema["properties"].as_object() {
        for (k, s) in props {
            let v = match s["type"].as_str() {
                Some("string") => match s["enum"].as_array() {
                    Some(e) => rng.pick(e).clone(),
                    None => json!(format!("v{}", rng.below(3))),
                },
                Some("integer") | Some("number") => {
                    json!(s["minimum"].as_i64().unwrap_or(1) + rng.below(3) as i64)
                }
                Some("boolean") => json!(rng.chance(50)),
                Some("array") => json!([]),
                _ => continue,
            };
            o.insert(k.clone(), v);
        }
    }
    Value::Object(o)
}
pub fn invalid(schema: &Value, root: &str, rng: &mut Rng) -> Option<Invalid> {
    let mut v = valid(schema, rng);
    let props = schema["properties"].as_object()?;
    let (k, s) = props.iter().find(|(_, s)| s["type"] == "integer")?;
    let _ = s;
    v[k] = json!("not a number");
    Some(Invalid {
        value: v,
        path: format!("{root}.{k}"),
        rule: "a string where an integer is required".into(),
    })
}
pub fn mutate(schema: &Value, _current: &Value, rng: &mut Rng) -> Value {
    valid(schema, rng)
}
