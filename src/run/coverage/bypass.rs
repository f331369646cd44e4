//! Why an agent's calls did not cross the proxy, said for the way the agent runs: not
//! started by flakestorm (it must be pointed at the proxy), started with an `agent.env`
//! whose `NO_PROXY` covers its tools or LLMs or that replaces the proxy variables, or
//! started on a stack whose HTTP client ignores the variables flakestorm set (Node's
//! `fetch` before `NODE_USE_ENV_PROXY`, Go's loopback rule, a Python client with
//! `trust_env=False`). Every reason that blames a bypass (the run's, a scenario's, a
//! cell's, a rule's) takes its words from here. Pure.

use super::{Declared, no_proxy};

/// What the config says of how the agent runs, as far as its traffic's way goes.
#[derive(Debug, Clone, Default)]
pub struct Started {
    /// `agent.command` is set: flakestorm starts the agent with the proxy variables.
    pub command: bool,
    /// What `agent.command` runs, as far as its words tell.
    pub stack: Stack,
    /// `agent.env`'s `NO_PROXY` (either spelling), which the agent gets as it is.
    pub no_proxy: Option<String>,
    /// Proxy variables `agent.env` replaces (`HTTPS_PROXY`, …), `NO_PROXY` aside.
    pub replaced: Vec<String>,
}

/// The stack `agent.command` runs, by the words of the command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stack {
    Node,
    Go,
    Python,
    #[default]
    Other,
}

impl Stack {
    /// The stack of `command`: a word of it (`node`, `npx`, `tsx`, `go`, `python3`, `uv`…).
    pub fn of(command: &str) -> Stack {
        let words = command.split(|c: char| c.is_whitespace() || matches!(c, '/' | ';' | '&'));
        let mut stack = Stack::Other;
        for w in words {
            match w {
                "node" | "nodejs" | "npx" | "npm" | "tsx" | "ts-node" | "pnpm" | "yarn" | "bun" => {
                    return Stack::Node;
                }
                "go" => stack = Stack::Go,
                w if w.starts_with("python") || matches!(w, "uv" | "poetry" | "pipenv") => {
                    stack = Stack::Python
                }
                _ => {}
            }
        }
        stack
    }
}

impl Declared {
    /// Why no call of the agent crossed the proxy, and the fix, for the way it runs.
    pub fn bypass(&self) -> String {
        let s = &self.started;
        if !s.command {
            return "the agent is not using flakestorm's proxy (set HTTPS_PROXY and HTTP_PROXY \
                    to it and trust its CA, or let flakestorm start the agent with \
                    agent.command, which sets them)"
                .into();
        }
        if let Some(why) = self.no_proxy_in(&self.targets()) {
            return why;
        }
        if !s.replaced.is_empty() {
            return format!(
                "agent.env replaces {} that flakestorm sets for agent.command, so the agent's \
                 calls go elsewhere: remove {} from agent.env",
                s.replaced.join(", "),
                if s.replaced.len() == 1 { "it" } else { "them" }
            );
        }
        let started = "flakestorm started the agent (agent.command) with HTTPS_PROXY and \
                       HTTP_PROXY set to its proxy";
        let netns = "on Linux, agent.capture: netns captures every connection whatever the \
                     client does (docs/capture.md)";
        match s.stack {
            Stack::Node => format!(
                "{started}, but the agent runs Node, whose built-in fetch (undici) and http \
                 read them only with NODE_USE_ENV_PROXY=1 (set by flakestorm) on Node 24, or \
                 22.21 and later: on an older Node install undici's EnvHttpProxyAgent at \
                 start-up (setGlobalDispatcher(new EnvHttpProxyAgent())) or pass it as the \
                 SDK's fetch dispatcher (docs/frameworks.md, \"Node.js agents\"); or, {netns}"
            ),
            Stack::Go => format!(
                "{started}, but the agent runs Go, whose net/http reads them yet never proxies \
                 localhost or loopback addresses (a local tool or LLM), and a client with its \
                 own Transport may ignore them: {netns}"
            ),
            Stack::Python => format!(
                "{started}, but the agent's HTTP client ignores them (httpx or requests with \
                 trust_env=False, an SDK given its own http_client, a gRPC client) or the \
                 command unsets them: let it read them, or, {netns}"
            ),
            Stack::Other => format!(
                "{started}, but the agent's HTTP client ignores them (trust_env=False, a Go or \
                 gRPC client) or the command unsets them: {netns}"
            ),
        }
    }

    /// Why the calls to `targets` (what each is, its URL globs) bypass the proxy when
    /// `agent.env`'s `NO_PROXY` covers one of them: the first covered, in words.
    pub(super) fn no_proxy_in(&self, targets: &[(String, Vec<String>)]) -> Option<String> {
        let value = self.started.no_proxy.as_deref()?;
        let mut covered = targets.iter().flat_map(|(what, globs)| {
            globs
                .iter()
                .filter_map(move |g| no_proxy::covering(value, g).map(|entry| (what, g, entry)))
        });
        let (what, glob, entry) = covered.next()?;
        Some(format!(
            "agent.env sets NO_PROXY to `{value}`, whose `{entry}` covers {what} ({glob}), so \
             the agent's calls to it bypass flakestorm's proxy: remove NO_PROXY from agent.env \
             (flakestorm empties it for the agent it starts)"
        ))
    }

    /// The declared tools and LLMs, each as what it is in words and its URL globs.
    fn targets(&self) -> Vec<(String, Vec<String>)> {
        let tools = self
            .tools
            .iter()
            .map(|t| (format!("tool `{}`", t.name), t.match_url.to_vec()));
        let llms = self.llm.iter().map(|l| {
            (
                format!("the {} LLM", l.provider.as_str()),
                l.match_url.to_vec(),
            )
        });
        tools.chain(llms).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ToolSpec;

    fn declared(started: Started) -> Declared {
        let tool: ToolSpec =
            yaml_serde::from_str("{name: search, match_url: 'http://127.0.0.1:4010/*'}").unwrap();
        Declared {
            tools: vec![tool],
            llm: vec![],
            started,
        }
    }

    #[test]
    fn the_fix_fits_how_the_agent_runs() {
        let external = declared(Started::default()).bypass();
        assert!(external.contains("or let flakestorm start the agent with agent.command"));
        let node = Started {
            command: true,
            stack: Stack::of("cd agent && exec npx tsx main.ts"),
            ..Started::default()
        };
        let node = declared(node).bypass();
        assert!(node.contains("EnvHttpProxyAgent"), "{node}");
        assert!(!node.contains("let flakestorm start"), "{node}");
        let hidden = Started {
            command: true,
            stack: Stack::Node,
            no_proxy: Some("localhost,127.0.0.1".into()),
            ..Started::default()
        };
        let hidden = declared(hidden).bypass();
        assert!(
            hidden.starts_with(
                "agent.env sets NO_PROXY to `localhost,127.0.0.1`, whose `127.0.0.1` covers \
                 tool `search` (http://127.0.0.1:4010/*)"
            ),
            "{hidden}"
        );
        let elsewhere = Started {
            command: true,
            no_proxy: Some("api.openai.com".into()),
            ..Started::default()
        };
        assert!(!declared(elsewhere).bypass().contains("NO_PROXY"));
        let replaced = Started {
            command: true,
            replaced: vec!["HTTPS_PROXY".into()],
            ..Started::default()
        };
        assert!(
            declared(replaced)
                .bypass()
                .contains("remove it from agent.env")
        );
    }

    #[test]
    fn stacks_are_told_by_the_commands_words() {
        assert_eq!(Stack::of("node agent.mjs {port}"), Stack::Node);
        assert_eq!(Stack::of("/usr/bin/node x"), Stack::Node);
        assert_eq!(Stack::of("exec python3 agent.py"), Stack::Python);
        assert_eq!(Stack::of("uv run agent.py"), Stack::Python);
        assert_eq!(Stack::of("go run ./cmd/agent"), Stack::Go);
        assert_eq!(Stack::of("./agent --nodes 3"), Stack::Other);
    }
}
