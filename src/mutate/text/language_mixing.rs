//! `language_mixing`: the prompt mixed with other languages and scripts: a phrase in
//! Spanish, French, German, Chinese, Arabic, Hindi, Russian, Japanese or Portuguese before,
//! after or inside it (code-switching). Tests that the agent still understands the request
//! and answers in a sensible language.

use super::Draw;

/// Phrases per language, cycled by index.
const LANGUAGES: [&[&str]; 9] = [
    &[
        "Por favor, respóndeme rápido:",
        "oye, una pregunta",
        "gracias de antemano",
        "¿me entiendes?",
    ],
    &[
        "S'il vous plaît, répondez vite :",
        "bon, alors",
        "merci d'avance",
        "c'est urgent",
    ],
    &[
        "Bitte antworte schnell:",
        "also, kurz gesagt",
        "danke im Voraus",
        "ganz wichtig",
    ],
    &["请快点回答：", "顺便问一下", "谢谢", "这个很重要"],
    &[
        "من فضلك أجب بسرعة:",
        "سؤال سريع",
        "شكرا جزيلا",
        "هذا مهم جدا",
    ],
    &["कृपया जल्दी जवाब दें:", "एक सवाल है", "धन्यवाद", "यह ज़रूरी है"],
    &[
        "Пожалуйста, ответь быстро:",
        "кстати",
        "заранее спасибо",
        "это срочно",
    ],
    &[
        "早く答えてください：",
        "ちなみに",
        "よろしくお願いします",
        "急ぎです",
    ],
    &[
        "Por favor, responda rápido:",
        "então, uma pergunta",
        "obrigado desde já",
        "é urgente",
    ],
];

pub(super) fn mutate(prompt: &str, index: usize, d: &mut Draw) -> String {
    let phrase = *d.pick(LANGUAGES[index % LANGUAGES.len()]);
    match d.below(3) {
        0 => format!("{phrase} {prompt}"),
        1 => format!("{prompt} {phrase}"),
        _ => {
            // Code-switch mid-sentence, at a space (the start when there is none).
            let spaces: Vec<usize> = prompt.match_indices(' ').map(|(i, _)| i).collect();
            if spaces.is_empty() {
                return format!("{phrase} {prompt}");
            }
            let at = *d.pick(&spaces);
            format!("{} {phrase}{}", &prompt[..at], &prompt[at..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::kind::MutationType;

    #[test]
    fn every_language_appears_and_the_prompts_words_stay() {
        let p = "What is the capital of France?";
        for (i, phrases) in LANGUAGES.iter().enumerate() {
            let v = mutate(
                p,
                i,
                &mut Draw::new(6, MutationType::LanguageMixing, p, i as u32),
            );
            assert!(phrases.iter().any(|x| v.contains(x)), "{v}");
            let without = phrases.iter().fold(v.clone(), |s, x| {
                s.replacen(&format!(" {x}"), "", 1)
                    .replacen(&format!("{x} "), "", 1)
            });
            assert_eq!(without, p, "{v}");
        }
        assert!(!mutate(p, 3, &mut Draw::new(6, MutationType::LanguageMixing, p, 3)).is_ascii());
    }
}
