//! A rug pull's claim on telling a session that its tool list changed
//! (`notifications/tools/list_changed`). The claim is taken when the rule decides to tell,
//! so parallel `tools/call`s of one session do not each carry a notice; it is kept once
//! the notice went out, and given back when dropped unsent (a fault answered the call, the
//! answer was JSON with no room for it, the upstream failed), so a later call tells.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a session (or a rule's sessionless traffic) was told, or is being told.
pub type Told = Arc<AtomicBool>;

/// A taken claim on `Told`; shared by the decision and the edit that sends the notice.
#[derive(Debug)]
pub struct Notice {
    told: Told,
    sent: AtomicBool,
}

impl Notice {
    /// Claims `told` when nobody has told (or is telling) its session yet.
    pub fn claim(told: &Told) -> Option<Arc<Self>> {
        told.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| {
                Arc::new(Self {
                    told: told.clone(),
                    sent: AtomicBool::new(false),
                })
            })
    }

    /// The notice went out: the session stays told (the event is queued ahead of the answer).
    pub fn sent(&self) {
        self.sent.store(true, Ordering::Release);
    }
}

impl Drop for Notice {
    fn drop(&mut self) {
        if !*self.sent.get_mut() {
            self.told.store(false, Ordering::Release);
        }
    }
}

/// Two claims are the same when they are on the same session.
impl PartialEq for Notice {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.told, &other.told)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_at_a_time_kept_when_sent_given_back_when_not() {
        let told = Told::default();
        let first = Notice::claim(&told).expect("nobody told yet");
        assert!(
            Notice::claim(&told).is_none(),
            "a parallel call is not told too"
        );
        drop(first);
        let second = Notice::claim(&told).expect("an unsent claim is given back");
        second.sent();
        drop(second);
        assert!(Notice::claim(&told).is_none(), "told once");
    }
}
