"""Fixtures for the web view suite (tests/web).

* `browser` – Debian's headless Chromium (/usr/bin/chromium) through Playwright.
* `stack`   – the frameworks suite's scripted LLM, tool API and LangGraph agent.
* `fs`      – one `flakestorm serve` on loopback ports the OS picks, and its login link.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for d in (HERE.parent / "pyharness", HERE.parent / "frameworks"):
    if str(d) not in sys.path:
        sys.path.insert(0, str(d))

import _frameworks  # noqa: E402
import flakestorm_harness as harness  # noqa: E402

@pytest.fixture(scope="module")
def browser():
    yield from harness.chromium()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    s = _frameworks.Stack(tmp_path_factory.mktemp("stack"))
    yield s
    s.close()


@pytest.fixture(scope="module")
def fs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    daemon = harness.Flakestorm.start(tmp, _frameworks.runner_env())
    daemon.link = daemon.wait_line(r"^flakestorm: web view at (\S+) ").group(1)
    yield daemon
    daemon.stop()


def login(browser, link: str, **context):
    """A new browser context logged in with `link` (the one `serve` printed, or the same
    through another address); its page, on the runs page."""
    from playwright.sync_api import expect

    ctx = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **context})
    page = ctx.new_page()
    page.goto(link)
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    return page


@pytest.fixture(scope="module")
def agent():
    from _web import StubAgent

    a = StubAgent()
    yield a
    a.close()


@pytest.fixture(scope="module")
def slow_agent():
    """An agent that takes 40 ms an answer: a run of a few dozen cases lasts long enough
    to be watched (and broken) while it runs."""
    from _web import StubAgent

    a = StubAgent(delay_s=0.04)
    yield a
    a.close()
