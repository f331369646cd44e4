//! The mutation engine: adversarial variants of a golden prompt, one small generator per
//! type (`text/`, one file each), every variant drawn from its own seeded stream (`draw`),
//! so the same seed and config give byte-identical variants everywhere; `model/` asks the
//! `model:` LLM for the types that need one; `wire/` builds the wire-level attacks (sent by
//! `agent::send_raw`, judged by `wire::judge`). `plan` turns `mutations:` into a run's cases.

// No catch-all arm over a mutation type: a new type must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

mod draw;
pub mod kind;
pub mod model;
mod plan;
pub mod text;
pub mod wire;

pub use draw::Draw;
pub use kind::{Family, MutationType};
pub use plan::{Dropped, Plan, Variant, plan, unsupported};
