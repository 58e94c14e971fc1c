//! The fuzzer's parts: [`generate`] makes custom-resource specs from a CRD's schema (valid
//! ones, ones that break one rule, and updates), drawing from [`rng`]'s seeded generator.

pub mod generate;
pub mod rng;
