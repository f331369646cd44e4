//! An exchange still waiting for its answer (a fault's hold, the upstream, a request
//! rewrite). When the client gives up first, hyper drops the request's future and with it
//! this guard, which then records and counts the exchange as `client_cancelled`: every
//! attempt an SDK makes shows in `flakestorm_requests_total`, the fault counters and the
//! journal, including the ones it abandoned (a `timeout` fault longer than its timeout).

use super::recorder::{Owner, Recorder};
use crate::exchange::{ErrorInfo, ErrorKind, ErrorSource, Outcome};

/// Owns the exchange's recorder until the answer is built (`take`).
pub struct Pending {
    /// Always present until `take` or drop.
    rec: Option<Recorder>,
    /// A response transform planned but not yet given a response: if the client leaves
    /// now, that fault or attack never acted.
    awaiting: Option<Owner>,
}

impl Pending {
    pub fn new(rec: Recorder) -> Self {
        Pending {
            rec: Some(rec),
            awaiting: None,
        }
    }

    pub fn rec(&mut self) -> &mut Recorder {
        self.rec
            .as_mut()
            .expect("the recorder is present until taken")
    }

    /// Marks whose response transform is waiting for the upstream's response.
    pub fn awaiting(&mut self, owner: Option<Owner>) {
        self.awaiting = owner;
    }

    /// The recorder, to finish the exchange with its answer; nothing is recorded on drop.
    pub fn take(mut self) -> Recorder {
        self.rec
            .take()
            .expect("the recorder is present until taken")
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(mut rec) = self.rec.take() else {
            return;
        };
        if let Some(owner) = self.awaiting {
            rec.not_applied(owner, "the client gave up before the response arrived");
        }
        let error = ErrorInfo {
            source: ErrorSource::Downstream,
            kind: ErrorKind::ClientCancelled,
            message: "the client gave up before the answer (it closed the connection or \
                      cancelled the request)"
                .into(),
        };
        rec.finish(
            Outcome::Error {
                error,
                status: None,
            },
            0,
        );
    }
}
