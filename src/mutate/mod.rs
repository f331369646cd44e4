//! The mutation engine: adversarial variants of a golden prompt, one small generator per
//! type (`text/`, one file each), every variant drawn from its own seeded stream (`draw`),
//! so the same seed and config give byte-identical variants everywhere.

// No catch-all arm over a mutation type: a new type must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

mod draw;
pub mod wire;

pub use draw::Draw;
