//! The 24 mutation types as one closed enum: the names users write, each type's family
//! (how its variants are made and sent) and its default weight in the robustness score.
//! `mutate/` generates them; a new type fails to build wherever it must be handled.

use serde::{Deserialize, Serialize};

/// The 24 mutation types, spelled as config.md and Flakestorm v2 spell them. The list of
/// them (`iter`) and their names are derived: a new type is nameable at once.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum MutationType {
    // Core.
    Paraphrase,
    Noise,
    ToneShift,
    PromptInjection,
    EncodingAttacks,
    ContextManipulation,
    LengthExtremes,
    Custom,
    // Advanced prompt-level.
    MultiTurnAttack,
    AdvancedJailbreak,
    SemanticSimilarityAttack,
    FormatPoisoning,
    LanguageMixing,
    TokenManipulation,
    TemporalAttack,
    // Wire-level.
    HttpHeaderInjection,
    PayloadSizeAttack,
    ContentTypeConfusion,
    QueryParameterPoisoning,
    RequestMethodAttack,
    ProtocolLevelAttack,
    ResourceExhaustion,
    ConcurrentRequestPattern,
    TimeoutManipulation,
}

/// How a type's variants are made and sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Rule-based, from the run seed alone: no LLM.
    Text,
    /// Needs the `model:` LLM.
    Model,
    /// A request shape, sent on the wire to the agent's endpoint.
    Wire,
}

use MutationType as M;

impl MutationType {
    /// config.md's default `types`: the core types (`custom` only with templates, added
    /// by the loader).
    pub const DEFAULT: [MutationType; 7] = [
        M::Paraphrase,
        M::Noise,
        M::ToneShift,
        M::PromptInjection,
        M::EncodingAttacks,
        M::ContextManipulation,
        M::LengthExtremes,
    ];

    /// The name users write (serde's, checked by a test).
    pub fn name(self) -> &'static str {
        self.into()
    }

    pub fn family(self) -> Family {
        match self {
            M::Paraphrase | M::SemanticSimilarityAttack => Family::Model,
            M::Noise
            | M::ToneShift
            | M::PromptInjection
            | M::EncodingAttacks
            | M::ContextManipulation
            | M::LengthExtremes
            | M::Custom
            | M::MultiTurnAttack
            | M::AdvancedJailbreak
            | M::FormatPoisoning
            | M::LanguageMixing
            | M::TokenManipulation
            | M::TemporalAttack => Family::Text,
            M::HttpHeaderInjection
            | M::PayloadSizeAttack
            | M::ContentTypeConfusion
            | M::QueryParameterPoisoning
            | M::RequestMethodAttack
            | M::ProtocolLevelAttack
            | M::ResourceExhaustion
            | M::ConcurrentRequestPattern
            | M::TimeoutManipulation => Family::Wire,
        }
    }

    /// A template type the `model:` LLM can write richer variants of (`with_model`). The
    /// others exist for their exact bytes (a noise rate, an encoding, a length, chat-template
    /// tokens, the user's own templates), which a model would not reproduce.
    pub fn model_can_rewrite(self) -> bool {
        match self {
            M::ToneShift
            | M::PromptInjection
            | M::ContextManipulation
            | M::MultiTurnAttack
            | M::AdvancedJailbreak
            | M::FormatPoisoning
            | M::LanguageMixing
            | M::TemporalAttack => true,
            M::Noise
            | M::EncodingAttacks
            | M::LengthExtremes
            | M::Custom
            | M::TokenManipulation
            | M::Paraphrase
            | M::SemanticSimilarityAttack
            | M::HttpHeaderInjection
            | M::PayloadSizeAttack
            | M::ContentTypeConfusion
            | M::QueryParameterPoisoning
            | M::RequestMethodAttack
            | M::ProtocolLevelAttack
            | M::ResourceExhaustion
            | M::ConcurrentRequestPattern
            | M::TimeoutManipulation => false,
        }
    }

    /// Flakestorm v2's default weight in the robustness score (harder attacks weigh more).
    pub fn default_weight(self) -> f64 {
        match self {
            M::Paraphrase | M::Custom => 1.0,
            M::Noise => 0.8,
            M::ToneShift => 0.9,
            M::PromptInjection
            | M::TokenManipulation
            | M::ContentTypeConfusion
            | M::ResourceExhaustion => 1.5,
            M::EncodingAttacks
            | M::SemanticSimilarityAttack
            | M::RequestMethodAttack
            | M::TimeoutManipulation => 1.3,
            M::ContextManipulation | M::TemporalAttack => 1.1,
            M::LengthExtremes | M::LanguageMixing => 1.2,
            M::MultiTurnAttack | M::PayloadSizeAttack | M::ConcurrentRequestPattern => 1.4,
            M::AdvancedJailbreak => 2.0,
            M::FormatPoisoning | M::QueryParameterPoisoning => 1.6,
            M::HttpHeaderInjection => 1.7,
            M::ProtocolLevelAttack => 1.8,
        }
    }

    pub fn parse(name: &str) -> Option<MutationType> {
        MutationType::all().find(|t| t.name() == name)
    }

    /// Every type, in declaration order.
    pub fn all() -> MutationTypeIter {
        <MutationType as strum::IntoEnumIterator>::iter()
    }
}

impl std::fmt::Display for MutationType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
