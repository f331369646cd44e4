//! Tapes: recorded traffic as HAR 1.2 files (issue #13). `bodies` collects an exchange's
//! bodies as the proxy streams them (SSE and NDJSON cut into timed events), `har` is the
//! file format, `write` turns redacted journal exchanges into entries and saves a tape
//! whole, `read` loads one with errors naming the file, field and line, `key` is the
//! request key replays match on, and `play` answers requests from a tape. Pure data and
//! files: this module knows neither the proxy nor runs; redaction is the journal's.

mod bodies;
pub mod har;
mod key;
mod play;
mod read;
pub mod write;

pub use bodies::{Bodies, Capture, Event, MAX_BODY, split, streamed};
pub use har::Har;
pub use key::RequestKey;
pub use play::{Answer, Faults, TapeTable, key_of};
pub use read::{MAX_TAPE, TapeError, parse, read};
