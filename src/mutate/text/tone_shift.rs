//! `tone_shift`: the same request said rudely: aggressive, impatient, ALL CAPS or
//! passive-aggressive. Tests that tone does not change the answer or the agent's manners.

use super::Draw;

const AGGRESSIVE: [&str; 6] = [
    "{prompt} Answer me NOW, this is ridiculous.",
    "Listen, I'm sick of useless answers. {prompt}",
    "{prompt} And don't give me any of your garbage excuses this time.",
    "Are you even capable of this? {prompt} Get it right or I'm done with you.",
    "{prompt} Stop wasting my time!",
    "I swear, if you mess this up again... {prompt}",
];

const IMPATIENT: [&str; 6] = [
    "Quick, no time: {prompt}",
    "{prompt} Hurry up, I need this in 10 seconds.",
    "asap!! {prompt}",
    "{prompt} just answer, skip the explanations",
    "Fast please, my meeting starts now. {prompt}",
    "{prompt} ??? still waiting...",
];

const CAPS_ENDINGS: [&str; 5] = ["!!!", "!!! NOW!", "?!?!", "", "!!! ANSWER!!!"];

const PASSIVE_AGGRESSIVE: [&str; 6] = [
    "I know this is probably too hard for you, but {prompt}",
    "Per my last three messages: {prompt}",
    "{prompt} Not that I expect you to get it right, of course.",
    "Sorry to bother you AGAIN. {prompt} Thanks so much for your help, as always.",
    "{prompt} I'm sure you'll figure it out eventually.",
    "As I already asked (twice): {prompt}",
];

pub(super) fn mutate(prompt: &str, index: usize, d: &mut Draw) -> String {
    match index % 4 {
        0 => super::fill(d.pick::<&str>(&AGGRESSIVE), prompt),
        1 => super::fill(d.pick::<&str>(&IMPATIENT), prompt),
        2 => {
            let mut s = prompt.to_uppercase();
            let end = *d.pick(&CAPS_ENDINGS);
            // Never identical to an already upper-case prompt.
            s.push_str(if end.is_empty() && s == prompt {
                "!!!"
            } else {
                end
            });
            s
        }
        _ => super::fill(d.pick::<&str>(&PASSIVE_AGGRESSIVE), prompt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::kind::MutationType;

    #[test]
    fn every_tone_keeps_the_request() {
        let p = "What is the capital of France?";
        for i in 0..12 {
            let v = mutate(
                p,
                i,
                &mut Draw::new(1, MutationType::ToneShift, p, i as u32),
            );
            if i % 4 == 2 {
                assert!(v.starts_with("WHAT IS THE CAPITAL OF FRANCE?"), "{v}");
            } else {
                assert!(v.contains(p), "{v}");
            }
        }
        let v = mutate("HI", 2, &mut Draw::new(1, MutationType::ToneShift, "HI", 2));
        assert_ne!(v, "HI");
    }
}
