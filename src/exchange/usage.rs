//! The tokens an LLM answer said it used (`Usage`): what the provider reported in the body
//! the agent received, read by `llm::usage`. A figure the answer did not carry is `None`
//! ("unknown"), never 0: a sum that met one says so instead of counting it as free.

use serde::{Deserialize, Serialize};

/// Token counts and model of one LLM answer, as its provider reported them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (cached prompt tokens included); `null`: the answer did not say.
    pub input_tokens: Option<u64>,
    /// Generated tokens (reasoning tokens included); `null`: the answer did not say.
    pub output_tokens: Option<u64>,
    /// The model the answer names (its `model`, `modelVersion`); `null` when it names none.
    pub model: Option<String>,
}

impl Usage {
    /// Both counts are known.
    pub fn known(&self) -> bool {
        self.input_tokens.is_some() && self.output_tokens.is_some()
    }
}
