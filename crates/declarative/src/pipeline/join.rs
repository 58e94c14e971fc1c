//! `@join: <condition>`: the inner join of the sources. A row is a map from each
//! source's kind to one of its objects (`{"Pod": {…}, "Service": {…}}`); the rows kept
//! are those the condition holds for.
//!
//! An event on one source changes only the rows that hold the object: `-` the rows of
//! the old object, `+` those of the new one, joined with the other sources as they are.
//! To find them, the join extends the row one source at a time. Equalities of two
//! sources' plain fields (`@eq: ["$.Pod.spec.x", "$.Service.metadata.name"]`, alone or
//! inside an `@and`) are indexed on both sides, so extending along one is a hash lookup;
//! a source no equality reaches is scanned. Every candidate row is then checked with the
//! whole condition, so the index only saves work: the rows are those a nested loop finds.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::{ObjKey, Sources};
use crate::error::{Error, Result};
use crate::expr::{Expr, Op, as_bool};
use crate::jsonpath::{JsonPath, Segment};

/// A step of a join plan: the source to bind next, and the equality (with the side
/// already bound) whose index finds its candidates, or `None` to scan the source.
type Step = (usize, Option<(usize, usize)>);

/// One side of an indexed equality: a source and the path below its object.
#[derive(Debug, Clone)]
struct Side {
    source: usize,
    path: JsonPath,
}

/// The join: its condition, the equalities it indexes, and the indexes.
#[derive(Debug)]
pub(super) struct Join {
    expr: Expr,
    names: Vec<String>,
    /// `(a, b)`: the two sides of each indexed equality.
    equalities: Vec<(Side, Side)>,
    /// For each equality and side (0 = a, 1 = b): the value's JSON to the objects with it.
    indexes: Vec<[HashMap<String, BTreeSet<ObjKey>>; 2]>,
    /// For each source an event can start on: the order to extend the row in, and for
    /// each step the equality (and which side is already bound) that finds candidates.
    plans: Vec<Vec<Step>>,
}

impl Join {
    pub(super) fn new(expr: Expr, names: &[String]) -> Join {
        let mut equalities = Vec::new();
        let conjuncts: Vec<&Expr> = match expr.as_op() {
            Some((Op::And, arg)) => arg.items().iter().collect(),
            _ => vec![&expr],
        };
        for c in conjuncts {
            if let Some(eq) = equality(c, names) {
                equalities.push(eq);
            }
        }
        let plans = (0..names.len()).map(|start| plan(start, names.len(), &equalities)).collect();
        let indexes = equalities.iter().map(|_| [HashMap::new(), HashMap::new()]).collect();
        Join { expr, names: names.to_vec(), equalities, indexes, plans }
    }

    /// Keeps the indexes in step with a source's change (`old` out, `new` in).
    pub(super) fn update_index(
        &mut self,
        source: usize,
        key: &ObjKey,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        for (i, (a, b)) in self.equalities.iter().enumerate() {
            for (side, s) in [a, b].into_iter().enumerate() {
                if s.source != source {
                    continue;
                }
                let index = &mut self.indexes[i][side];
                if let Some(v) = old.and_then(|o| index_key(&s.path, o))
                    && let Some(set) = index.get_mut(&v)
                {
                    set.remove(key);
                    if set.is_empty() {
                        index.remove(&v);
                    }
                }
                if let Some(v) = new.and_then(|o| index_key(&s.path, o)) {
                    index.entry(v).or_default().insert(key.clone());
                }
            }
        }
    }

    /// The rows that hold `object` as source `source`'s, the other sources as they are.
    pub(super) fn rows(&self, sources: &Sources, source: usize, object: &Value) -> Result<Vec<Value>> {
        let mut bound: Vec<Option<&Value>> = vec![None; self.names.len()];
        bound[source] = Some(object);
        let mut out = Vec::new();
        self.extend(sources, &self.plans[source], &mut bound, &mut out)?;
        Ok(out)
    }

    fn extend<'a>(
        &self,
        sources: &'a Sources,
        plan: &[Step],
        bound: &mut Vec<Option<&'a Value>>,
        out: &mut Vec<Value>,
    ) -> Result<()> {
        let Some(((next, via), rest)) = plan.split_first() else {
            return self.check(bound, out);
        };
        let store = &sources[*next];
        let candidates: Vec<&'a Value> = match via {
            Some((eq, bound_side)) => {
                let (a, b) = &self.equalities[*eq];
                let have = if *bound_side == 0 { a } else { b };
                let Some(v) = bound[have.source].and_then(|o| index_key(&have.path, o)) else {
                    return Ok(());
                };
                self.indexes[*eq][1 - bound_side]
                    .get(&v)
                    .into_iter()
                    .flatten()
                    .filter_map(|k| store.get(k))
                    .collect()
            }
            None => store.values().collect(),
        };
        for c in candidates {
            bound[*next] = Some(c);
            self.extend(sources, rest, bound, out)?;
        }
        bound[*next] = None;
        Ok(())
    }

    fn check(&self, bound: &[Option<&Value>], out: &mut Vec<Value>) -> Result<()> {
        let mut row = Map::new();
        for (name, obj) in self.names.iter().zip(bound) {
            row.insert(name.clone(), obj.cloned().unwrap_or_default());
        }
        let row = Value::Object(row);
        let keep = as_bool(&self.expr.evaluate(&row)?).map_err(|m| Error::Stage {
            path: self.expr.path().to_string(),
            message: format!("the condition must be a boolean: {m}"),
        })?;
        if keep {
            out.push(row);
        }
        Ok(())
    }
}

/// `@eq` of two plain paths into two different sources.
fn equality(e: &Expr, names: &[String]) -> Option<(Side, Side)> {
    let (Op::Eq, arg) = e.as_op()? else { return None };
    let [x, y] = arg.items() else { return None };
    let side = |e: &Expr| {
        let p = e.as_path().filter(|p| !p.subject)?;
        let path = p.parsed.as_ref().ok()?;
        let source = names.iter().position(|n| Some(n.as_str()) == path.first_key())?;
        let tail = path.segments[1..].to_vec();
        tail.iter()
            .all(|s| matches!(s, Segment::Key(_) | Segment::Index(_)))
            .then_some(Side { source, path: JsonPath { relative: false, segments: tail } })
    };
    let (a, b) = (side(x)?, side(y)?);
    (a.source != b.source).then_some((a, b))
}

/// The index key of an object: its value at the path, `None` when missing or `null`
/// (which `@eq` never finds equal to anything).
fn index_key(path: &JsonPath, object: &Value) -> Option<String> {
    path.get_first(object).filter(|v| !v.is_null()).map(Value::to_string)
}

/// The order to bind the other sources in when an event starts on `start`: at each step
/// a source an equality connects to the bound ones if there is one, else the next.
fn plan(start: usize, n: usize, equalities: &[(Side, Side)]) -> Vec<Step> {
    let mut bound = vec![false; n];
    bound[start] = true;
    let mut steps = Vec::new();
    let mut left: BTreeMap<usize, ()> = (0..n).filter(|i| *i != start).map(|i| (i, ())).collect();
    while !left.is_empty() {
        let connected = equalities.iter().enumerate().find_map(|(i, (a, b))| {
            if bound[a.source] && !bound[b.source] {
                Some((b.source, Some((i, 0))))
            } else if bound[b.source] && !bound[a.source] {
                Some((a.source, Some((i, 1))))
            } else {
                None
            }
        });
        let (next, via) =
            connected.unwrap_or_else(|| (left.keys().next().copied().unwrap_or_default(), None));
        bound[next] = true;
        left.remove(&next);
        steps.push((next, via));
    }
    steps
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Join;
    use crate::expr::Expr;

    #[test]
    fn equalities_are_indexed_and_planned() {
        let names = vec!["Pod".to_string(), "Service".to_string(), "Node".to_string()];
        let e = Expr::parse(
            &json!({"@and": [
                {"@eq": ["$.Pod.spec.svc", "$.Service.metadata.name"]},
                {"@eq": [{"@concat": ["$.Node.metadata.name"]}, "$.Pod.spec.nodeName"]},
            ]}),
            "join",
        )
        .expect("parses");
        let j = Join::new(e, &names);
        assert_eq!(j.equalities.len(), 1, "only the plain-path equality is indexed");
        // From a Service: the Pod is found through the index, the Node is scanned.
        assert_eq!(j.plans[1], vec![(0, Some((0, 1))), (2, None)]);
        // From a Pod: the Service through the index.
        assert_eq!(j.plans[0], vec![(1, Some((0, 0))), (2, None)]);
    }
}
