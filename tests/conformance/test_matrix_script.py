"""scripts/conformance_matrix.py counts cells honestly: a cell passes only when every test of
it passed, a cell with no real counterpart is n/a (not a pass), and `--check` refuses a stale
file. It runs on hand-written JUnit XML, so it needs neither flakestorm nor an SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "conformance_matrix.py"


def junit(path: Path, cases: list[tuple[str, str, list[str]]]) -> Path:
    body = ""
    for name, outcome, cells in cases:
        props = "".join(f'<property name="conformance.cell" value="{c}"/>' for c in cells)
        mark = {"passed": "", "failed": '<failure message="boom"/>', "skipped": '<skipped message="x"/>'}[outcome]
        body += f'<testcase classname="t" name="{name}"><properties>{props}</properties>{mark}</testcase>'
    path.write_text(f"<testsuites><testsuite>{body}</testsuite></testsuites>")
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def row(text: str, fault: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| `{fault}` |"))
    return [c.strip() for c in line.strip("|").split("|")][1:]


def test_counts_passes_failures_na_and_untested(tmp_path):
    xml = junit(tmp_path / "r.xml", [
        ("a", "passed", ["rate_limit|openai chat|plain|openai 9.0.0"]),
        ("b", "passed", ["empty|openai chat|plain|openai 9.0.0"]),
        ("c", "failed", ["empty|openai chat|plain|openai 9.0.0"]),
        ("d", "skipped", ["garbage|openai chat|streamed|openai 9.0.0"]),
    ])
    out = tmp_path / "m.md"
    got = run("--out", str(out), f"cur={xml}")
    assert got.returncode == 0, got.stderr
    text = out.read_text()
    assert row(text, "rate_limit")[:2] == ["✓ 1", "·"]
    assert row(text, "empty")[0] == "✗ 1/2"
    assert row(text, "garbage")[1] == "✗ 0/1"  # a skipped test is not a pass
    # Gemini has no separate quota failure: n/a with its reason, not a pass.
    assert row(text, "rate_limit quota")[6].startswith("n/a[^")
    # 12 columns × rows; tested 3, passing 1; one summary row for the one SDK set.
    summary = next(ln for ln in text.splitlines() if ln.startswith("| cur |"))
    assert "| openai 9.0.0 | 3 | 1 |" in summary, summary

    assert run("--check", "--out", str(out), f"cur={xml}").returncode == 0
    out.write_text(text.replace("✓ 1", "✓ 2", 1))
    stale = run("--check", "--out", str(out), f"cur={xml}")
    assert stale.returncode != 0 and "not what the test results give" in stale.stderr


def test_refuses_results_without_cells(tmp_path):
    xml = junit(tmp_path / "r.xml", [("a", "passed", [])])
    got = run("--out", str(tmp_path / "m.md"), f"cur={xml}")
    assert got.returncode != 0 and "no conformance.cell properties" in got.stderr
    assert not (tmp_path / "m.md").exists()
