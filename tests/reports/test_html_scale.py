"""The HTML report of a 900-case contract run in headless Chromium (issue #53): the matrix
and the first failure sit on the first screen, not under a wall of links; a cell that 200
cases failed names its first five per cause and counts the rest; the failures are grouped
by cause (the failing invariant and the kind of its reason). The run is real: a script
agent over 300 prompts and three scenarios, answering, failing to cite, or crashing by the
prompt's number."""

from __future__ import annotations

import json
import subprocess

from conftest import flakestorm_bin

PROMPTS = [f"question {i:03d}" for i in range(300)]

CONFIG = f"""proxy: {{listen: '127.0.0.1:0'}}
control: {{listen: '127.0.0.1:0'}}
agent: {{command: 'sh answer.sh {{prompt}}'}}
golden_prompts: {json.dumps(PROMPTS)}
advanced: {{concurrency: 10}}
contract:
  name: at-scale
  invariants:
    - {{id: cites-source, type: contains, value: source, severity: high}}
    - {{id: answers, type: output_not_empty}}
  chaos_matrix:
    - name: calm
    - name: calm-again
    - name: calm-too
"""

# n % 3: 0 answers without a source, 1 cites one, 2 crashes (no answer).
AGENT = """n=$(expr "${1##* }" + 0)
case $((n % 3)) in
  0) echo "no idea";;
  1) echo "per the source";;
  2) echo "crashed" >&2; exit 3;;
esac
"""


def test_a_900_case_report_keeps_the_matrix_first_and_counts_the_rest(browser, tmp_path):
    (tmp_path / "flakestorm.yaml").write_text(CONFIG)
    (tmp_path / "answer.sh").write_text(AGENT)
    run = subprocess.run([flakestorm_bin(), "contract", "run", "-o", "out/big.json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, f"{run.stdout}\n{run.stderr}"
    html = tmp_path / "big.html"
    done = subprocess.run([flakestorm_bin(), "report", "out/big.json", "-f", "html", "-o",
                           str(html)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(html.as_uri(), wait_until="load")
        assert page.locator("details.case").count() == 900
        # The first screen: the whole matrix, and the first failure right under it.
        matrix = page.locator("table.heatmap").bounding_box()
        assert matrix and matrix["y"] + matrix["height"] <= 800, matrix
        first = page.locator("#contract-first-failure")
        box = first.bounding_box()
        assert box and box["y"] < 800, box
        assert "question 000" in first.inner_text()
        assert "cites-source: does not contain" in first.inner_text()

        # A failed cell: 200 failing cases in two causes, each five links and a count.
        cell = page.locator("#contract-cell-0-0")
        causes = cell.locator(".cause")
        assert causes.count() == 2
        for i in range(2):
            cause = causes.nth(i)
            assert cause.locator("a").count() == 5
            assert cause.locator(".more").inner_text() == "and 95 more"
        assert cell.locator("a").count() <= 12, "no wall of links"
        assert causes.nth(0).inner_text().startswith("100 for does not contain \"source\": ")

        # Failures by cause across the cells: invariant and reason kind, most cases first.
        rows = page.locator("table.causes tr")
        assert rows.count() == 1 + 3
        texts = [rows.nth(i).inner_text() for i in range(1, 4)]
        assert all("300" in t and "and 295 more" in t for t in texts), texts
        assert sum("cites-source" in t for t in texts) == 2
        # Every link lands somewhere.
        for href in {a.get_attribute("href") for a in page.locator("table.causes a").all()}:
            assert page.locator(f"[id='{href[1:]}']").count() == 1, href
        assert errors == [], errors
    finally:
        page.close()
