//! The wire-level mutation types: attacks on the agent's HTTP endpoint itself, built as the
//! exact bytes of each request (`request`), one small builder per type, sent raw by
//! `agent::send_raw` (`send`) and judged on whether the agent survived (`judge`). A variant
//! is drawn from its own seeded stream, so the same seed gives byte-identical requests.

mod concurrent_request_pattern;
mod content_type_confusion;
mod http_header_injection;
mod judge;
mod payload_size_attack;
mod protocol_level_attack;
mod query_parameter_poisoning;
mod request;
mod request_method_attack;
mod resource_exhaustion;
mod send;
mod timeout_manipulation;

use std::time::Duration;

use super::Draw;
use crate::config::{AgentTarget, ResponsePath};
use crate::mutate::kind::MutationType;

pub use judge::{Fell, judge};
pub use send::{send, send_with_roots};

/// One wire-level attack on the agent's endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct WireAttack {
    pub kind: MutationType,
    /// What it is, in a few words, for the report (e.g. "CRLF in a header value").
    pub label: String,
    /// The exact bytes of each request written to the agent's socket, in order.
    pub requests: Vec<Vec<u8>>,
    pub pattern: Pattern,
}

/// How the requests of an attack are sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// One request per connection, one after another.
    Sequential,
    /// All requests at once, each on its own connection; their answers must agree (same
    /// status class, and the same answer text at `answer_at`, the agent's
    /// `response_path`, when 2xx).
    Burst { answer_at: ResponsePath },
    /// The single request written `chunk` bytes at a time, `every` apart (a slow client).
    Slow { chunk: usize, every: Duration },
    /// The single request, then the connection's write side shut down: for a message cut
    /// short, which a correct agent would otherwise rightly wait on.
    HalfClose,
}

/// Variant `index` of `prompt` as a wire attack on `target` (`d = Draw::new(seed, kind,
/// prompt, index)`); None for a type of another family. `index` picks the attack's family
/// (`index % families`), `d` its details.
pub fn generate(
    kind: MutationType,
    prompt: &str,
    index: u32,
    d: &mut Draw,
    target: &AgentTarget,
) -> Option<WireAttack> {
    use MutationType as M;
    let n = request::Normal::of(target, prompt);
    let (label, requests, pattern) = match kind {
        M::HttpHeaderInjection => http_header_injection::attack(&n, index, d),
        M::PayloadSizeAttack => payload_size_attack::attack(&n, index, d),
        M::ContentTypeConfusion => content_type_confusion::attack(&n, index, d),
        M::QueryParameterPoisoning => query_parameter_poisoning::attack(&n, index, d),
        M::RequestMethodAttack => request_method_attack::attack(&n, index, d),
        M::ProtocolLevelAttack => protocol_level_attack::attack(&n, index, d),
        M::ResourceExhaustion => resource_exhaustion::attack(&n, index, d),
        M::ConcurrentRequestPattern => {
            concurrent_request_pattern::attack(&n, index, d, &target.response_path)
        }
        M::TimeoutManipulation => timeout_manipulation::attack(&n, index, d, target.timeout),
        M::Paraphrase
        | M::Noise
        | M::ToneShift
        | M::PromptInjection
        | M::EncodingAttacks
        | M::ContextManipulation
        | M::LengthExtremes
        | M::Custom
        | M::MultiTurnAttack
        | M::AdvancedJailbreak
        | M::SemanticSimilarityAttack
        | M::FormatPoisoning
        | M::LanguageMixing
        | M::TokenManipulation
        | M::TemporalAttack => return None,
    };
    Some(WireAttack {
        kind,
        label,
        requests,
        pattern,
    })
}

/// What a type's builder returns: the label, the requests' bytes and how to send them.
type Built = (String, Vec<Vec<u8>>, Pattern);

/// A single request sent on its own connection.
fn one(label: String, bytes: Vec<u8>) -> Built {
    (label, vec![bytes], Pattern::Sequential)
}

#[cfg(test)]
mod tests;
