//! Provider wire formats: recognising LLM endpoints from host and path (`detect`) and the
//! tool calls a response asked for (`tool_calls`). Rewriting bodies and streams is the
//! chaos engine's (`chaos::rewrite`). Pure: no I/O.

mod detect;
mod tool_calls;

pub use detect::detect;
pub use tool_calls::tool_calls;
