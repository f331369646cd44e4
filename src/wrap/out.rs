//! The wrap's stdout, the client's end of the stdio transport: whole lines, one at a time,
//! each flushed as written (a client waits for a line, not for a buffer to fill).

use std::sync::Arc;

use tokio::io::{AsyncWriteExt, Stdout};
use tokio::sync::Mutex;

#[derive(Clone)]
pub struct Out(Arc<Mutex<Option<Stdout>>>);

impl Out {
    pub fn stdout() -> Out {
        Out(Arc::new(Mutex::new(Some(tokio::io::stdout()))))
    }

    /// Writes `line` and a newline. A client that closed its end gets nothing more.
    pub async fn line(&self, line: &[u8]) {
        let mut out = self.0.lock().await;
        let Some(w) = out.as_mut() else { return };
        let mut framed = Vec::with_capacity(line.len() + 1);
        framed.extend_from_slice(line);
        framed.push(b'\n');
        if w.write_all(&framed).await.is_err() || w.flush().await.is_err() {
            out.take();
        }
    }
}
