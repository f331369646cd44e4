//! Sending a wire attack as its pattern says: one connection per request, in turn; a burst
//! all at once; a slow write; a write then the end of input. The replies come back in the
//! order of the requests.

use std::sync::Arc;

use rustls_pki_types::CertificateDer;

use super::{Pattern, WireAttack};
use crate::agent::{RawOptions, RawReply, send_raw_with};
use crate::config::AgentTarget;

/// Sends every request of `attack` to the agent; a reply per request, in order.
pub async fn send(attack: &WireAttack, target: &AgentTarget) -> Vec<RawReply> {
    send_with_roots(attack, target, &[]).await
}

/// `send`, trusting `extra_roots` too for an https endpoint (a private CA).
pub async fn send_with_roots(
    attack: &WireAttack,
    target: &AgentTarget,
    extra_roots: &[CertificateDer<'static>],
) -> Vec<RawReply> {
    let mut opts = RawOptions {
        extra_roots: extra_roots.to_vec(),
        ..RawOptions::default()
    };
    match &attack.pattern {
        Pattern::Burst { .. } => return burst(attack, target, opts).await,
        Pattern::Slow { chunk, every } => opts.pace = Some((*chunk, *every)),
        Pattern::HalfClose => opts.half_close = true,
        Pattern::Sequential => {}
    }
    let mut replies = Vec::with_capacity(attack.requests.len());
    for bytes in &attack.requests {
        replies.push(send_raw_with(target, bytes, &opts).await);
    }
    replies
}

async fn burst(attack: &WireAttack, target: &AgentTarget, opts: RawOptions) -> Vec<RawReply> {
    let shared = Arc::new((target.clone(), opts));
    let tasks: Vec<_> = attack
        .requests
        .iter()
        .map(|bytes| {
            let (shared, bytes) = (shared.clone(), bytes.clone());
            tokio::spawn(async move { send_raw_with(&shared.0, &bytes, &shared.1).await })
        })
        .collect();
    let mut replies = Vec::with_capacity(tasks.len());
    for task in tasks {
        replies.push(task.await.unwrap_or_else(|e| RawReply {
            status: None,
            head: String::new(),
            body: bytes::Bytes::new(),
            elapsed: std::time::Duration::ZERO,
            error: Some(format!("the sending task failed: {e}")),
            delivered: false,
        }));
    }
    replies
}
