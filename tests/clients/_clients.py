"""Shared content of the real-client suite (imported by conftest and tests).

Kept out of conftest.py so the tests can import it by a name that is unique when both
Python suites run in one pytest session (`from conftest import ...` would get whichever
suite's conftest was imported last).
"""

from __future__ import annotations

from flakestorm_harness import PROXY_VARS as _HARNESS_PROXY_VARS
from flakestorm_harness import clean_env as _clean_env

CLIENT_TIMEOUT_S = 60
SSE_GATE_TIMEOUT_S = 10

# The harness's variables plus ftp_proxy (curl reads it for ftp:// URLs); this suite has
# always dropped it too, the conformance suite never did.
PROXY_VARS = _HARNESS_PROXY_VARS | {"ftp_proxy"}


def clean_env() -> dict[str, str]:
    """os.environ without any proxy or CA-bundle variable (in either case)."""
    return _clean_env(PROXY_VARS)


CHAT_ID = "chatcmpl-flakestorm-test"
CHAT_CONTENT = "Hello from the origin ✓"  # non-ASCII on purpose: bytes must survive the proxy
STREAM_PIECES = ["Hel", "lo, ", "strë", "am!"]
USAGE = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}


def chat_completion(model: str) -> dict:
    return {
        "id": CHAT_ID,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": CHAT_CONTENT},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": USAGE,
    }


def chat_chunks(model: str) -> list[dict]:
    def chunk(delta: dict, finish: str | None) -> dict:
        return {
            "id": CHAT_ID,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    return (
        [chunk({"role": "assistant", "content": ""}, None)]
        + [chunk({"content": p}, None) for p in STREAM_PIECES]
        + [chunk({}, "stop")]
    )
