//! The generator against the server's pipeline: the bundled examples' CRD schemas (compiled
//! from their `operator.ct`) and [`every_keyword`], a schema with each keyword a CRD can
//! hold. For many seeds, every [`valid`] and [`mutate`]d value is accepted as kubesim
//! accepts a custom resource write (prune, drop nulls, default, validate, CEL), and every
//! [`invalid`] one is refused with one schema cause, at the path it names.

use std::collections::BTreeSet;
use std::path::Path;

use ctop_runtime::{Limits, Script};
use serde_json::{Value, json};

use super::{invalid, mutate, valid};
use crate::fuzz::rng::Rng;

const SEEDS: u64 = 300;

/// What the server says about a custom resource whose spec is `spec`: the fields of the
/// schema causes, and of the CEL causes, as kubesim's `validate` runs them on a create.
fn write(schema: &Value, spec: &Value) -> (Vec<String>, Vec<String>) {
    let mut obj = json!({
        "apiVersion": "fuzz.example.com/v1", "kind": "Fuzz",
        "metadata": {"name": "x", "namespace": "default"}, "spec": spec,
    });
    ctop_schema::prune(&mut obj, schema);
    ctop_schema::drop_nulls(&mut obj, schema);
    ctop_schema::apply_defaults(&mut obj, schema);
    let causes = ctop_schema::validate(&obj, schema);
    let fields: Vec<String> = causes.iter().map(|c| c.field.clone()).collect();
    let cel = ctop_schema::CelRules::compile(schema);
    let blocked = ctop_schema::CelRules::blocking_cause(causes.iter().map(|c| c.reason.as_str()));
    let cel = if cel.is_empty() || blocked.is_some() {
        Vec::new()
    } else {
        cel.validate(&obj, None).causes.into_iter().map(|c| c.field).collect()
    };
    (fields, cel)
}

/// Runs `valid`, `invalid` and `mutate` for many seeds on a whole-object schema,
/// returning the rules broken and how many valid values a CEL rule refused.
fn exercise(name: &str, schema: &Value) -> (BTreeSet<String>, usize) {
    let spec = &schema["properties"]["spec"];
    let (mut rules, mut cel_refused, mut unchanged) = (BTreeSet::new(), 0, 0);
    for seed in 0..SEEDS {
        let mut rng = Rng::new(seed);
        let v = valid(spec, &mut rng);
        let (causes, cel) = write(schema, &v);
        assert!(causes.is_empty(), "{name} seed {seed}: valid value {v} refused at {causes:?}");
        cel_refused += usize::from(!cel.is_empty());

        let m = mutate(spec, &v, &mut rng);
        let (causes, _) = write(schema, &m);
        assert!(causes.is_empty(), "{name} seed {seed}: mutation {m} of {v} refused at {causes:?}");
        unchanged += usize::from(m == v);

        if let Some(bad) = invalid(spec, "spec", &mut rng) {
            let (causes, _) = write(schema, &bad.value);
            assert_eq!(
                causes,
                [bad.path.as_str()],
                "{name} seed {seed}: {} ({}) in {}",
                bad.path,
                bad.rule,
                bad.value
            );
            rules.insert(bad.rule.split(' ').take(3).collect::<Vec<_>>().join(" "));
        }
    }
    assert!(unchanged < SEEDS as usize / 20, "{name}: {unchanged} of {SEEDS} mutations changed nothing");
    (rules, cel_refused)
}

/// The schemas of the resources an example declares.
fn example_schemas(example: &str) -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(example);
    let script = Script::from_dir(&dir, "operator.ct", 1, Limits::default()).unwrap_or_else(|e| {
        panic!(
            "{example}: {e} (examples that import npm packages need `npm ci` first, as scripts/test.sh does)"
        )
    });
    script.spec().resources.iter().map(|r| (format!("{example}/{}", r.kind), r.schema.clone())).collect()
}

#[test]
fn examples_valid_invalid_and_mutated_values_meet_the_server() {
    let examples = ["cronjob", "greeting", "myapp", "myresource", "webapp", "webpage"];
    let mut seen = 0;
    for example in examples {
        for (name, schema) in example_schemas(example) {
            let (rules, _) = exercise(&name, &schema);
            assert!(!rules.is_empty(), "{name}: nothing broken");
            seen += 1;
        }
    }
    assert!(seen >= 7, "{seen} resources");
}

/// A CRD schema with every keyword the generator reads.
fn every_keyword() -> Value {
    serde_json::from_str(EVERY_KEYWORD).expect("the test schema is JSON")
}

const EVERY_KEYWORD: &str = r#"
{"type": "object", "required": ["spec"], "properties": {
 "status": {"type": "object", "properties": {}},
 "spec": {
  "type": "object",
  "required": ["name", "replicas", "mode", "ports"],
  "x-kubernetes-validations": [{"rule": "!has(self.minReplicas) || self.minReplicas <= self.replicas", "message": "minReplicas above replicas"}],
  "properties": {
   "name": {"type": "string", "minLength": 3, "maxLength": 20, "pattern": "^[a-z][a-z0-9-]*[a-z0-9]$"},
   "replicas": {"type": "integer", "minimum": 1, "default": 1},
   "minReplicas": {"type": "integer", "minimum": 0, "maximum": 10},
   "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true},
   "step": {"type": "integer", "multipleOf": 5, "minimum": 5, "maximum": 100},
   "mode": {"type": "string", "enum": ["Fast", "Safe"]},
   "level": {"type": "integer", "enum": [1, 2, 3]},
   "enabled": {"type": "boolean", "default": true},
   "createdAt": {"type": "string", "format": "date-time"},
   "day": {"type": "string", "format": "date"},
   "contact": {"type": "string", "format": "email"},
   "homepage": {"type": "string", "format": "uri"},
   "host": {"type": "string", "format": "hostname"},
   "id": {"type": "string", "format": "uuid"},
   "address": {"type": "string", "format": "ipv4"},
   "subnet": {"type": "string", "format": "cidr"},
   "payload": {"type": "string", "format": "byte"},
   "color": {"type": "string", "format": "hexcolor"},
   "version": {"type": "string", "pattern": "^v[0-9]+\\.[0-9]+\\.[0-9]+$"},
   "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$", "maxLength": 8},
   "word": {"type": "string", "pattern": "^\\w+( \\w+)*$", "maxLength": 30},
   "note": {"type": "string", "nullable": true, "maxLength": 40},
   "maxUnavailable": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
   "surge": {"x-kubernetes-int-or-string": true},
   "tags": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 10}},
   "ports": {"type": "array", "minItems": 1, "maxItems": 3, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name", "port"], "properties": {"name": {"type": "string", "maxLength": 15}, "port": {"type": "integer", "minimum": 1, "maximum": 65535}, "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"}}}},
   "weights": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "integer", "minimum": 0, "maximum": 100}},
   "labels": {"type": "object", "maxProperties": 5, "additionalProperties": {"type": "string", "maxLength": 63}},
   "limits": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "integer", "minimum": 0}},
   "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
   "raw": {"x-kubernetes-preserve-unknown-fields": true},
   "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
   "target": {"type": "object", "properties": {"kind": {"type": "string"}, "name": {"type": "string"}}, "anyOf": [{"required": ["kind"]}, {"required": ["name"]}]},
   "either": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
   "nested": {"type": "object", "properties": {"deep": {"type": "object", "required": ["value"], "properties": {"value": {"type": "integer", "minimum": -5, "maximum": -1}}}}}
  }
 }
}}
"#;

#[test]
fn every_keyword_valid_invalid_and_mutated_values_meet_the_server() {
    let schema = every_keyword();
    let base = "spec.versions[0].schema.openAPIV3Schema";
    assert_eq!(ctop_schema::check_structural(&schema, base), [], "the test schema is a CRD's");
    let (rules, cel_refused) = exercise("every-keyword", &schema);
    for want in [
        "a string where",
        "an integer where",
        "a boolean where",
        "not one of",
        "below the minimum",
        "above the maximum",
        "not above the",
        "not below the",
        "not a multiple",
        "shorter than the",
        "longer than the",
        "does not match",
        "not a valid",
        "fewer items than",
        "more items than",
        "a duplicate key",
        "a duplicate item",
        "fewer entries than",
        "more entries than",
        "required field missing",
    ] {
        assert!(rules.contains(want), "no invalid value broke {want:?}: {rules:?}");
    }
    // The CEL rule holds for most values (minReplicas is drawn near its low end).
    assert!(cel_refused < SEEDS as usize / 2, "{cel_refused} refused by CEL");
}

#[test]
fn values_are_small_and_realistic() {
    let schema = every_keyword();
    let spec = &schema["properties"]["spec"];
    let label = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_lowercase())
            && !s.ends_with('-')
            && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    let (mut optional, mut replicas) = (0, Vec::new());
    for seed in 0..SEEDS {
        let v = valid(spec, &mut Rng::new(seed));
        assert!(label(v["name"].as_str().unwrap_or("")), "{}", v["name"]);
        for p in v["ports"].as_array().into_iter().flatten() {
            assert!(label(p["name"].as_str().unwrap_or("")), "{p}");
        }
        assert!(v["ports"].as_array().is_some_and(|a| (1..=3).contains(&a.len())));
        if let Some(r) = v["replicas"].as_i64() {
            replicas.push(r);
        }
        optional += usize::from(v.get("minReplicas").is_some());
    }
    assert!(replicas.iter().all(|r| (1..=101).contains(r)), "{replicas:?}");
    assert!(replicas.iter().filter(|r| **r <= 10).count() * 10 >= replicas.len() * 7);
    let half = SEEDS as usize / 2;
    assert!((half * 6 / 10..=half * 14 / 10).contains(&optional), "{optional} of {SEEDS} with minReplicas");
}

#[test]
fn same_seed_same_values() {
    let schema = every_keyword();
    let spec = &schema["properties"]["spec"];
    let run = |seed| {
        let mut rng = Rng::new(seed);
        let v = valid(spec, &mut rng);
        let m = mutate(spec, &v, &mut rng);
        (v, m, invalid(spec, "spec", &mut rng))
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42).0, run(43).0);
}

#[test]
fn unique_items_and_nothing_to_break() {
    // `uniqueItems` is refused in a CRD, but the validator implements it.
    let s = json!({"type": "array", "uniqueItems": true, "maxItems": 3,
        "items": {"type": "integer", "minimum": 0, "maximum": 3}});
    let server = super::place::Server::new(&s);
    for seed in 0..100 {
        let mut rng = Rng::new(seed);
        let v = valid(&s, &mut rng);
        assert_eq!(server.refusals(&v), Vec::<String>::new(), "{v}");
        if let Some(bad) = invalid(&s, "spec.list", &mut rng) {
            assert!(bad.path.starts_with("spec.list"), "{bad:?}");
        }
    }
    // Anything goes: nothing can be broken.
    let any = json!({"x-kubernetes-preserve-unknown-fields": true});
    assert_eq!(invalid(&any, "spec", &mut Rng::new(1)), None);
    assert_eq!(valid(&any, &mut Rng::new(1)), json!({}));
}
