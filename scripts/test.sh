#!/usr/bin/env bash
# The test command (README, CI): formatting, lints, every Rust test tier, then the
# real-client suite (curl, requests, httpx, openai SDK), the LLM-fault conformance suite
# (openai, anthropic, google-genai, ollama SDKs; current and older majors) and the
# agent-framework suite (LangGraph + langchain-openai, the OpenAI Agents SDK, LiteLLM,
# pydantic-ai, google-genai, smolagents and a Node agent on the openai npm SDK, under
# `contract run`; the MCP SDK's server and client under each MCP fault, current and older
# major; an Agents SDK agent on MCP) against the built
# binary, the HTML report opened in headless Chromium (tests/reports), and a recorded tape
# read by haralyzer (tests/tapes), and the deployment files run for real (tests/containers:
# the image built and run with podman, the compose example under podman-compose, the
# Kubernetes pod under podman kube play, promtool on the Prometheus files and on /metrics,
# the Grafana queries, systemd-analyze on the unit).
# It installs what the Python suites need into .venv-tests (and the older SDK majors into
# .venv-tests-older), so it works on a clean machine.
set -euo pipefail
cd "$(dirname "$0")/.."

# System tools the tests run (curl in tests/clients, kill from procps in the process tests,
# the venv module for the Python suites) and the build needs, installed with apt when
# missing on a clean machine.
missing=()
command -v curl >/dev/null || missing+=(curl)
type -P kill >/dev/null || missing+=(procps)
python3 -c "import ensurepip, venv" 2>/dev/null || missing+=(python3-venv)
# The binary's allocator (tikv-jemallocator) builds jemalloc from C: a compiler and make.
command -v cc >/dev/null || missing+=(gcc)
command -v make >/dev/null || missing+=(make)
# The HTML report suite (tests/reports) opens the report in Debian's Chromium.
[ -x /usr/bin/chromium ] || missing+=(chromium)
# agent.capture: netns (tests/capture_netns.rs, tests/frameworks/test_capture_netns.py)
# makes network namespaces: unshare, ip and nft (often in /usr/sbin, off a user's PATH).
has() { type -P "$1" >/dev/null || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
has unshare || missing+=(util-linux)
has ip || missing+=(iproute2)
has nft || missing+=(nftables)
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing ${missing[*]} (apt)"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# Node 20 comes with the machine; apt's nodejs where it is missing (undici needs 20.18 or
# newer). The Firefox suite drives Debian's firefox-esr.
if ! command -v npm >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
if [ ! -x /usr/bin/firefox-esr ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq firefox-esr
fi
# Debian's podman with runc (crun fails on these machines' cgroup layout: containers.conf
# says runc), mmdebstrap for the offline base images, promtool from Debian's prometheus,
# systemd-analyze from systemd. kubectl (for `kubectl kustomize`) comes with this machine;
# Debian's own kubernetes-client (1.20) is too old for the overlay, so where kubectl is
# missing apt tries the `kubectl` package (a configured Kubernetes apt source) and the
# Kubernetes test fails saying so. A machine that cannot run containers at all skips the
# container tests with a loud message (tests/containers).
deploy_missing=()
command -v podman >/dev/null || deploy_missing+=(podman)
command -v runc >/dev/null || deploy_missing+=(runc)
command -v mmdebstrap >/dev/null || deploy_missing+=(mmdebstrap)
command -v promtool >/dev/null || deploy_missing+=(prometheus)
command -v systemd-analyze >/dev/null || deploy_missing+=(systemd)
if [ ${#deploy_missing[@]} -gt 0 ]; then
  echo "==> installing ${deploy_missing[*]} (apt)"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${deploy_missing[@]}" \
    || echo "WARNING: could not install ${deploy_missing[*]}: the container tests will say what is missing"
fi
# Alone: where no apt source has it, the others above must still install.
if ! command -v kubectl >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubectl \
    || echo "WARNING: no kubectl package in this machine's apt sources: the Kubernetes test will fail"
fi

# Downloads and the container base images, in the background while cargo builds (CPU bound:
# these wait on the network and the disk): the Python venvs (the older SDK majors, for
# the conformance and MCP suites, in their own), the npm packages pinned by their
# package-lock.json (the Node agent's openai and undici; puppeteer-core for Firefox), and
# the offline base images (best effort: tests/containers makes them, or says why not).
prep_log="$(realpath -m "${CARGO_TARGET_DIR:-target}")/test-prepare.log"
mkdir -p "$(dirname "$prep_log")"
prepare() {
  set -e
  [ -x .venv-tests/bin/python ] || python3 -m venv .venv-tests
  .venv-tests/bin/pip install --quiet --disable-pip-version-check \
    -r tests/clients/requirements.txt -r tests/conformance/requirements.txt \
    -r tests/frameworks/requirements.txt -r tests/reports/requirements.txt \
    -r tests/tapes/requirements.txt -r tests/containers/requirements.txt \
    -r tests/otel/requirements.txt -r tests/web/requirements.txt
  [ -x .venv-tests-older/bin/python ] || python3 -m venv .venv-tests-older
  .venv-tests-older/bin/pip install --quiet --disable-pip-version-check \
    -r tests/conformance/requirements-older.txt
  npm ci --prefix tests/frameworks/node --no-audit --no-fund --silent
  npm ci --prefix tests/web/firefox --no-audit --no-fund --silent
  CONTAINERS_CONF="$PWD/tests/containers/containers.conf" python3 -c '
import sys; sys.path.insert(0, "tests/containers"); import helpers
why = helpers.usable()
print(why) if why else helpers.ensure_bases()' || echo "(the base images are made by tests/containers)"
}
start_prep=$(date +%s)
( prepare; echo "--- prepared in $(( $(date +%s) - start_prep )) s" ) >"$prep_log" 2>&1 &
prepared=$!
# A step that fails first leaves no half-made venv behind: the script ends after it.
trap 'wait "$prepared" 2>/dev/null || true' EXIT

# fmt and clippy are components: a minimal rustup profile lacks them.
if command -v rustup >/dev/null; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> cargo clippy --all-targets -- -D warnings"
cargo clippy --locked --all-targets --quiet -- -D warnings

echo "==> cargo test (unit, API, integration)"
cargo test --locked

echo "==> real clients through the proxy (tests/clients)"
# The suites run the binary `cargo test` built for the integration tests, and the web
# suite's seeder (examples/seed_runs.rs: a run store of 10,000 runs filled with the
# store's own code), which `cargo test` builds too. A `cargo build` here would rebuild most
# of the tree without the dev-dependencies' features (tokio's test-util, unused by the
# binary): about 4 min on a cold machine.
bin="$(realpath "${CARGO_TARGET_DIR:-target}")/debug/flakestorm"
for built in "$bin" "$(dirname "$bin")/examples/seed_runs"; do
  [ -x "$built" ] || { echo "$built was not built by cargo test"; exit 1; }
done
# What `prepare` fetched in the background must be there now.
if ! wait "$prepared"; then
  echo "the Python venvs, npm packages or base images could not be prepared:"; cat "$prep_log"
  exit 1
fi
tail -n 1 "$prep_log"
FLAKESTORM_BIN="$bin" .venv-tests/bin/python -m pytest tests/clients -q

echo "==> LLM faults against the real SDKs, current and older majors (tests/conformance)"
# The older majors (openai 1.x, anthropic 0.x, google-genai 1.x) get their own venv. Both
# runs mostly wait on timers and sockets, each with its own flakestorm and origins on
# OS-chosen ports, so they run side by side: together they take about as long as one.
results="$(realpath "${CARGO_TARGET_DIR:-target}")/conformance"
mkdir -p "$results"
FLAKESTORM_BIN="$bin" .venv-tests-older/bin/python -m pytest tests/conformance -q \
  --junitxml="$results/older.xml" >"$results/older.log" 2>&1 &
older=$!
current_rc=0
FLAKESTORM_BIN="$bin" .venv-tests/bin/python -m pytest tests/conformance -q \
  --junitxml="$results/current.xml" || current_rc=$?
older_rc=0
wait "$older" || older_rc=$?
echo "--- older SDK majors ($results/older.log):"
if [ "$older_rc" -eq 0 ]; then tail -n 1 "$results/older.log"; else cat "$results/older.log"; fi
if [ "$current_rc" -ne 0 ] || [ "$older_rc" -ne 0 ]; then exit 1; fi
# docs/conformance-matrix.md must be what both runs give.
python3 scripts/conformance_matrix.py --check current="$results/current.xml" older="$results/older.xml"

echo "==> agents on real frameworks under contract runs: LangGraph, Agents SDK, LiteLLM, pydantic-ai, google-genai, smolagents, Node, MCP, agent.capture: netns (tests/frameworks)"
FLAKESTORM_BIN="$bin" .venv-tests/bin/python -m pytest tests/frameworks -q
echo "--- the MCP faults against the older MCP SDK major (mcp 1.x, FastMCP), in the older-majors venv"
FLAKESTORM_BIN="$bin" .venv-tests-older/bin/python -m pytest tests/frameworks/test_mcp_sdk.py -q

echo "==> OTLP spans to a real receiver over gRPC and HTTP/protobuf: the real SDKs, a run's tree, an instrumented agent, MCP tool calls, a run submitted with other export, content as the GenAI messages, a collector that is down and comes back (tests/otel)"
FLAKESTORM_BIN="$bin" .venv-tests/bin/python -m pytest tests/otel -q

echo "==> the HTML report in headless Chromium (tests/reports)"
FLAKESTORM_BIN="$bin" .venv-tests/bin/python -m pytest tests/reports -q

echo "==> the web view in headless Chromium: live runs, compare, chaos, its security, load, phone, keyboard, contrast (tests/web)"
# Screenshots go to target/web/; FLAKESTORM_DOCS_IMAGES=1 also rewrites docs/images/web-*.png.
FLAKESTORM_BIN="$bin" .venv-tests/bin/python -m pytest tests/web -q

echo "==> the web view in headless Firefox ESR: the login link, a forged cookie, a run live to its verdict, a timeline, a broken stream resumed, CSRF and another origin refused, compare, chaos TTL, no CSP violation or outside request (tests/web/firefox)"
# Debian's firefox-esr driven over WebDriver BiDi by puppeteer-core (pinned by its
# package-lock.json): no geckodriver and no browser build downloaded.
FLAKESTORM_BIN="$bin" node --test tests/web/firefox/

echo "==> tapes read by an independent HAR reader (tests/tapes)"
FLAKESTORM_BIN="$bin" .venv-tests/bin/python -m pytest tests/tapes -q

echo "==> deployment run for real: image, compose, Kubernetes, Prometheus, Grafana, systemd (tests/containers)"
# While it runs, another process holds host ports 8080, 8081 and 8790 (tests/containers/
# held_ports.py): no deployment test may need a fixed host port.
deploy_start=$(date +%s)
CONTAINERS_CONF="$PWD/tests/containers/containers.conf" FLAKESTORM_BIN="$bin" \
  .venv-tests/bin/python -m pytest tests/containers -q -rs
echo "--- tests/containers took $(( $(date +%s) - deploy_start )) s (figures: target/containers/figures.json)"
