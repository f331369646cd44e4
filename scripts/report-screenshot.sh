#!/bin/sh
# Regenerates docs/img/report.png, the README's picture of the HTML report: the report of a
# real run (`flakestorm demo`, every phase against its in-process agent) opened in headless
# Chromium (/usr/bin/chromium, through the tests/reports harness, which checks the page as
# it goes) and shot full-page at 1200 px wide.
#
#   scripts/report-screenshot.sh            # builds flakestorm (debug) first
#   FLAKESTORM_BIN=path/to/flakestorm scripts/report-screenshot.sh
#
# Needs what ./scripts/test.sh installs for tests/reports (.venv-tests with Playwright).
set -eu
cd "$(dirname "$0")/.."
if [ -z "${FLAKESTORM_BIN:-}" ]; then
  cargo build --quiet
  FLAKESTORM_BIN="${CARGO_TARGET_DIR:-target}/debug/flakestorm"
fi
FLAKESTORM_BIN="$FLAKESTORM_BIN" .venv-tests/bin/python -m pytest -q \
  tests/reports/test_html.py::test_the_demo_report_renders_with_heatmap_and_timelines
cp target/report-screenshot.png docs/img/report.png
echo "docs/img/report.png: $(wc -c < docs/img/report.png) bytes"
