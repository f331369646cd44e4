//! Provider wire formats: recognising LLM and embedding endpoints from host and path
//! (`detect`, `declared`) and the tool calls a response asked for (`tool_calls`).
//! Rewriting bodies and streams is the chaos engine's (`chaos::rewrite`). Pure: no I/O.

mod detect;
mod tool_calls;

pub use detect::{declared, detect, provider_host};
pub use tool_calls::tool_calls;
