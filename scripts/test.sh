#!/usr/bin/env bash
# The test command (README, CI): formatting, lints, every Rust test tier, then the
# real-client suite (curl, requests, httpx, openai SDK), the LLM-fault conformance suite
# (openai, anthropic, google-genai, ollama SDKs) and the agent-framework suite (LangGraph +
# langchain-openai under `contract run`) against the built binary.
# It installs what the Python suite needs into .venv-tests, so it works on a clean machine.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> cargo clippy --all-targets -- -D warnings"
cargo clippy --locked --all-targets --quiet -- -D warnings

echo "==> cargo test (unit, API, integration)"
cargo test --locked

echo "==> real clients through the proxy (tests/clients)"
cargo build --locked --quiet
if [ ! -x .venv-tests/bin/python ]; then
  python3 -m venv .venv-tests
fi
.venv-tests/bin/pip install --quiet --disable-pip-version-check \
  -r tests/clients/requirements.txt -r tests/conformance/requirements.txt
FLAKESTORM_BIN="$PWD/target/debug/flakestorm" .venv-tests/bin/python -m pytest tests/clients -q

echo "==> LLM faults against the real SDKs (tests/conformance)"
FLAKESTORM_BIN="$PWD/target/debug/flakestorm" .venv-tests/bin/python -m pytest tests/conformance -q

echo "==> a LangGraph agent under contract runs (tests/frameworks)"
.venv-tests/bin/pip install --quiet --disable-pip-version-check -r tests/frameworks/requirements.txt
FLAKESTORM_BIN="$PWD/target/debug/flakestorm" .venv-tests/bin/python -m pytest tests/frameworks -q
