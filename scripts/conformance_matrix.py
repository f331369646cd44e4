#!/usr/bin/env python3
"""Writes docs/conformance-matrix.md: LLM fault × SDK surface × plain/streamed, per SDK set.

Reads the JUnit XML files that `pytest tests/conformance --junitxml=FILE` wrote, one per SDK
set (scripts/test.sh runs the suite once per pinned requirements file). Each test carries
`conformance.cell` properties recorded by tests/conformance/_matrix_cells.py from what the
test really did: the fault it installed and the requests its SDK sent. A cell passes when
every test that exercised it passed.

    python3 scripts/conformance_matrix.py [--check] [--out docs/conformance-matrix.md] \\
        current=target/conformance/current.xml older=target/conformance/older.xml

`--check` writes nothing and fails when the file differs from what the results give.
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROPERTY = "conformance.cell"
COMMAND = ("`scripts/test.sh` runs the suite in both venvs with `--junitxml=$T/conformance/current.xml` "
           "and `older.xml` (`$T`: `$CARGO_TARGET_DIR`, default `target`) and checks this file; "
           "regenerate it after that run with `python3 scripts/conformance_matrix.py "
           "current=$T/conformance/current.xml older=$T/conformance/older.xml`")

# The surfaces issue #15 names, then Ollama's /api/generate and OpenAI's legacy
# /v1/completions, which the suite also covers.
SURFACES = ["openai chat", "openai responses", "anthropic messages", "google-genai generate_content",
            "ollama chat", "ollama generate", "openai completions"]
SHORT = {"openai chat": "openai chat", "openai responses": "openai responses",
         "openai completions": "openai completions",
         "anthropic messages": "anthropic messages", "google-genai generate_content": "genai generate_content",
         "ollama chat": "ollama chat", "ollama generate": "ollama generate"}
MODES = ("plain", "streamed")

# Cells with no real counterpart: (fault, surface or None for all, mode or None for both, why).
NOT_APPLICABLE = [
    ("rate_limit quota", "google-genai generate_content", None,
     "a real exhausted Gemini quota is the same 429 `RESOURCE_EXHAUSTED` as `rate_limit` (row above)"),
    ("rate_limit quota", "ollama chat", None, "a local Ollama server has no quota"),
    ("rate_limit quota", "ollama generate", None, "a local Ollama server has no quota"),
    ("server_error in_stream", None, "plain",
     "`in_stream` breaks a streamed answer; a plain answer passes untouched and the fault is noted as skipped"),
    ("content_filter", "ollama chat", None,
     "Ollama has no content-filter or refusal signal: a rule for it is refused at load, and a rule without "
     "`provider` passes Ollama's answers through with the fault noted as skipped (tested)"),
    ("content_filter", "ollama generate", None, "Ollama has no content-filter or refusal signal (above)"),
    ("tool_call_corruption", "ollama generate", None, "Ollama's `/api/generate` takes no tools: its answers carry no tool call"),
    ("tool_call_corruption", "openai completions", None,
     "OpenAI's legacy `/v1/completions` takes no tools: its answers carry no tool call"),
    ("stream_cut loud", None, "plain",
     "on a plain answer `loud` changes nothing: every cut of a plain answer is a dropped connection (row `stream_cut`)"),
]


def fault_modes() -> list[str]:
    """The LLM fault modes in docs/faults.md's order (its `### \\`mode\\`` headings)."""
    text = (ROOT / "docs/faults.md").read_text()
    section = text.split("\n## LLM faults", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^### `([a-z_]+)`", section, re.M)


def read(label: str, path: Path):
    """{(fault, surface, mode): [outcome, ...]} and {sdk: version} of one results file."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as e:
        sys.exit(f"conformance_matrix: {label}: cannot read {path}: {e}")
    cells: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    versions: dict[str, str] = {}
    n = 0
    for case in tree.iter("testcase"):
        if case.find("skipped") is not None:
            outcome = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        else:
            outcome = "passed"
        for prop in case.iter("property"):
            if prop.get("name") != PROPERTY:
                continue
            parts = prop.get("value", "").split("|")
            if len(parts) != 4 or parts[1] not in SURFACES or parts[2] not in MODES:
                sys.exit(f"conformance_matrix: {path}: {case.get('name')}: bad {PROPERTY} {prop.get('value')!r}")
            fault, surface, mode, version = parts
            cells[(fault, surface, mode)].append(outcome)
            sdk, _, ver = version.partition(" ")
            versions[sdk] = ver
            n += 1
    if n == 0:
        sys.exit(f"conformance_matrix: {path}: no {PROPERTY} properties (was it written by tests/conformance?)")
    return cells, versions


def not_applicable(fault: str, surface: str, mode: str) -> str | None:
    for f, s, m, why in NOT_APPLICABLE:
        if f == fault and s in (None, surface) and m in (None, mode):
            return why
    return None


def rows_for(all_faults: set[str]) -> list[str]:
    order = ["none (baseline)"]
    for mode in fault_modes():
        order.append(mode)
        variants = sorted({f for f in all_faults if f.startswith(mode + " ")}
                          | {f for f, *_ in NOT_APPLICABLE if f.startswith(mode + " ")})
        order += variants
    rest = sorted(all_faults - set(order))
    return order + rest


def render(sets: list[tuple[str, dict, dict]]) -> str:
    all_faults = {f for _, cells, _ in sets for (f, _, _) in cells}
    rows = rows_for(all_faults)
    notes: dict[str, int] = {}
    out = ["# Conformance matrix", "",
           "LLM fault × SDK surface × plain/streamed, for each pinned SDK set of `tests/conformance`.",
           "Generated, do not edit. " + COMMAND + ".", "",
           "A cell is what the tests really exercised (_matrix_cells.py records the fault each test",
           "installed and the requests its SDK sent). `✓ n`: n tests exercised it and all passed;",
           "`✗ p/n`: p of n passed; `n/a`: no real counterpart (the note says why; not a pass);",
           "`·`: not tested. `none (baseline)` is no fault: the answer passes through intact.", ""]
    summary = ["| SDK set | SDKs | cells tested | passing | n/a | not tested | tests × cells |",
               "|---|---|---|---|---|---|---|"]
    tables = []
    for label, cells, versions in sets:
        sdks = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
        tested = passing = na = untested = runs = 0
        gaps: list[str] = []
        head = ["| fault | " + " | ".join(f"{SHORT[s]} {m}" for s in SURFACES for m in MODES) + " |",
                "|---|" + "---|" * (len(SURFACES) * len(MODES))]
        body = []
        for fault in rows:
            line = []
            for s in SURFACES:
                for m in MODES:
                    got = cells.get((fault, s, m))
                    why = not_applicable(fault, s, m)
                    if got:
                        tested += 1
                        runs += len(got)
                        ok = got.count("passed")
                        if ok == len(got):
                            passing += 1
                            line.append(f"✓ {ok}")
                        else:
                            line.append(f"✗ {ok}/{len(got)}")
                    elif why:
                        na += 1
                        k = notes.setdefault(why, len(notes) + 1)
                        line.append(f"n/a[^{k}]")
                    else:
                        untested += 1
                        gaps.append(f"`{fault}` × {s} {m}")
                        line.append("·")
            body.append(f"| `{fault}` | " + " | ".join(line) + " |")
        summary.append(f"| {label} | {sdks} | {tested} | {passing} | {na} | {untested} | {runs} |")
        tables += [f"## {label}: {sdks}", ""] + head + body + [""]
        if gaps:
            tables += ["Not tested: " + "; ".join(gaps) + ".", ""]
    out += summary + [""] + tables
    out += [f"[^{k}]: {why}" for why, k in notes.items()]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("results", nargs="+", metavar="LABEL=JUNIT.xml")
    ap.add_argument("--out", default=str(ROOT / "docs/conformance-matrix.md"))
    ap.add_argument("--check", action="store_true", help="fail if --out is not what the results give")
    args = ap.parse_args()
    sets = []
    for item in args.results:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            sys.exit(f"conformance_matrix: {item!r}: expected LABEL=JUNIT.xml")
        sets.append((label, *read(label, Path(path))))
    text = render(sets)
    out = Path(args.out)
    if args.check:
        if not out.exists() or out.read_text() != text:
            sys.exit(f"conformance_matrix: {out} is not what the test results give; regenerate it: {COMMAND}")
        print(f"conformance_matrix: {out} is up to date")
        return
    out.write_text(text)
    print(f"conformance_matrix: wrote {out}")


if __name__ == "__main__":
    main()
