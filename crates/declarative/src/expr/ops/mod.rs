//! The operators, by family: [`logic`] (control flow, booleans, list predicates),
//! [`arith`] (comparisons and arithmetic), [`misc`] (conversions, strings, `@selector`,
//! `@hash`, `@range`, `@rnd`) and [`hash`] (Go-compatible JSON and the MD5 base-36 digest
//! of `@hash`).

pub(super) mod arith;
pub(crate) mod hash;
mod label_syntax;
pub(super) mod logic;
pub(super) mod misc;
mod selector;

pub(crate) use hash::go_json;
