"""`slow_stream` on a plain (non-streamed) answer, on every surface: the whole answer waits
`first_token_ms`, then arrives intact, as a slow provider's does. (Streamed pacing is in the
per-provider files.)"""

from __future__ import annotations

import pytest

from _conformance import ANSWER, Timer
from _surfaces import SURFACES

FIRST_MS = 300


@pytest.mark.parametrize("surface", list(SURFACES))
def test_slow_plain_answer_is_late_and_intact(request, chaos, flakestorm, surface):
    provider, fixture, call, _ = SURFACES[surface]
    client = request.getfixturevalue(fixture)()
    chaos({"provider": provider, "mode": "slow_stream", "first_token_ms": FIRST_MS, "between_ms": 10})
    before = flakestorm.injected("slow_stream")
    with Timer() as t:
        text = call(client, False)
    assert text == ANSWER
    assert t.elapsed >= FIRST_MS / 1000, t.elapsed
    assert flakestorm.wait_injected("slow_stream", before + 1) == before + 1
