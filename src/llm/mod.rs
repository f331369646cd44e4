//! Provider wire formats. For now: recognising LLM endpoints from host and path
//! (`detect`). Parsing and re-encoding of provider bodies and streams lands with the chaos
//! engine. Pure: no I/O.

mod detect;

pub use detect::detect;
