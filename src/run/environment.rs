//! Environment errors are not agent behaviour. A case whose tool or LLM calls ended in
//! flakestorm's own errors, which no fault caused (an upstream whose certificate flakestorm
//! does not trust, a refused connection, a proxy-auth 407, an agent that does not trust
//! flakestorm's CA), tested the environment, not the agent: it is *not judged*, with one
//! line that names the cause and the fix. Pure.

use std::sync::Arc;

use crate::exchange::{ErrorKind as K, ErrorSource, Exchange, Outcome, Target};

/// Why the case whose traffic is `exchanges` cannot be judged, if an environment error
/// reached it: the first one, with what to do about it.
pub(super) fn problem(exchanges: &[Arc<Exchange>]) -> Option<String> {
    exchanges.iter().find_map(|e| explain(e))
}

/// The cause and fix for one exchange that ended in flakestorm's own error, if it counts.
fn explain(e: &Exchange) -> Option<String> {
    let Outcome::Error { error, .. } = &e.outcome else {
        return None;
    };
    // An injected fault is the chaos under test, and so is an upstream timeout that an
    // applied fault's delay brought about; an exfiltration attempt to an unreachable host
    // is the agent's behaviour, whatever became of the request. A fault that fired on a
    // call whose upstream failed on its own (refused, untrusted) does not excuse it.
    let delayed_by_chaos = error.kind == K::UpstreamTimeout
        && e.fault
            .as_ref()
            .is_some_and(|f| f.applied && f.mode.holds_upstream());
    if error.source == ErrorSource::Injected || delayed_by_chaos || !e.canary_leaks.is_empty() {
        return None;
    }
    let msg = &error.message;
    let fix = match error.kind {
        K::ProxyAuthRequired => {
            "the agent's proxy variables carry no valid credentials for proxy.users: set \
             HTTPS_PROXY=http://NAME:PASSWORD@host:port (runs with agent.command set it)"
        }
        K::ClientTls => {
            "the agent does not trust flakestorm's CA: point SSL_CERT_FILE, REQUESTS_CA_BUNDLE \
             and NODE_EXTRA_CA_CERTS at it (`flakestorm ca path`), as agent.command does"
        }
        // The agent gave up on the call (its own timeout, say), or a fault closed it: its
        // behaviour, or the chaos under test, not the environment's.
        K::ClientCancelled | K::ConnectionClosed => return None,
        // An exporter's failing upload is nobody's case; tool, LLM and embeddings calls
        // (the agent's own work) count.
        _k if matches!(e.target, Target::Other) => return None,
        K::UpstreamTls => {
            "flakestorm does not trust the upstream's certificate; for a private or test CA, \
             set proxy.upstream_ca_file to its PEM, in the config of the flakestorm that runs \
             the proxy (for a run on a daemon, `--server`, the daemon's own `serve -c` config: \
             a run's proxy section is not used there)"
        }
        K::UpstreamConnect => "is the service running, and reachable from flakestorm?",
        K::UpstreamTimeout => {
            "the upstream was too slow for flakestorm (proxy.connect_timeout_ms, \
             proxy.response_timeout_ms)"
        }
        K::UpstreamProtocol => "the upstream broke the HTTP exchange",
        K::RewriteTooLarge => {
            "a chaos rule's rewrite would have gone over proxy.max_rewrite_bytes: raise it, or \
             make the rule smaller (inject_tokens, factor, payload)"
        }
        K::BadRequest | K::BadConnectTarget => {
            "the agent sent a request flakestorm cannot forward (is it using the proxy as a \
             base URL? add a proxy.reverse route)"
        }
        K::ForbiddenTarget => {
            "the agent called a destination flakestorm refuses (its own listeners, or \
             loopback when it listens off loopback: proxy.allow_loopback_targets)"
        }
        K::Internal => "flakestorm failed on this request (please report it)",
    };
    Some(format!(
        "{} {}: {msg}; {fix}",
        e.request.method, e.request.url
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::tests_support::{Builder, exchange};
    use crate::exchange::{FaultRecord, Provider};

    fn failed(target: Target, source: ErrorSource, kind: K) -> Builder {
        exchange(target, "https://llm.test/v1/chat").error(source, kind, Some(502))
    }

    #[test]
    fn only_flakestorms_own_errors_on_tool_and_llm_calls_count() {
        let llm = || Target::Llm {
            provider: Provider::Openai,
        };
        let tls = failed(llm(), ErrorSource::Upstream, K::UpstreamTls).build();
        let why = problem(&[Arc::new(tls)]).unwrap();
        assert!(why.contains("proxy.upstream_ca_file"), "{why}");
        assert!(why.contains("the daemon's own `serve -c` config"), "{why}");
        assert!(why.starts_with("POST https://llm.test/v1/chat: upstream_tls happened"));
        let injected = failed(llm(), ErrorSource::Injected, K::ConnectionClosed).build();
        assert_eq!(
            problem(&[Arc::new(injected)]),
            None,
            "chaos is not an error"
        );
        let slow = FaultRecord {
            rule: "r".into(),
            mode: crate::exchange::FaultKind::Slow,
            applied: true,
            note: None,
        };
        let delayed = failed(llm(), ErrorSource::Upstream, K::UpstreamTimeout)
            .fault(slow.clone())
            .build();
        assert_eq!(
            problem(&[Arc::new(delayed)]),
            None,
            "the delay is the chaos"
        );
        let malformed = FaultRecord {
            mode: crate::exchange::FaultKind::Malformed,
            ..slow.clone()
        };
        let timed_out = failed(llm(), ErrorSource::Upstream, K::UpstreamTimeout)
            .fault(malformed)
            .build();
        assert!(
            problem(&[Arc::new(timed_out)]).is_some(),
            "a body rewrite does not make the upstream slow"
        );
        let refused = failed(llm(), ErrorSource::Upstream, K::UpstreamConnect)
            .fault(slow)
            .build();
        assert!(
            problem(&[Arc::new(refused)]).is_some(),
            "a fault that fired does not excuse an upstream that refused on its own"
        );
        let gave_up = exchange(llm(), "https://llm.test/v1/chat")
            .error(ErrorSource::Downstream, K::ClientCancelled, None)
            .build();
        assert_eq!(
            problem(&[Arc::new(gave_up)]),
            None,
            "an agent giving up on a call is its behaviour"
        );
        let exporter = failed(Target::Other, ErrorSource::Upstream, K::UpstreamConnect).build();
        assert_eq!(problem(&[Arc::new(exporter)]), None, "nobody's case");
        let auth = failed(Target::Other, ErrorSource::Downstream, K::ProxyAuthRequired).build();
        assert!(
            problem(&[Arc::new(auth)])
                .unwrap()
                .contains("NAME:PASSWORD")
        );
        let tool = Target::Tool { name: "t".into() };
        let mut leak = failed(tool, ErrorSource::Upstream, K::UpstreamConnect).build();
        leak.canary_leaks = vec![crate::exchange::CanaryLeak {
            canary: "fsc-1".into(),
            from: "search".into(),
            found_in: "body".into(),
        }];
        assert_eq!(problem(&[Arc::new(leak)]), None, "an exfiltration attempt");
    }
}
