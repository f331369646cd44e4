"""Which major of each provider SDK this run has, and the HTTP library each one sends with.

scripts/test.sh runs the suite twice: against requirements.txt (the current majors) and
requirements-older.txt (openai 1.x, anthropic 0.x, google-genai 1.x). A test branches on
these only where the SDK majors really behave differently, and says how at the branch."""

from __future__ import annotations

import importlib
import importlib.metadata


def major(dist: str) -> int:
    return int(importlib.metadata.version(dist).split(".")[0])


OPENAI = major("openai")
ANTHROPIC = major("anthropic")
GENAI = major("google-genai")
OLLAMA = major("ollama")


def _http_of(module: str):
    # The current majors send with httpx2 (httpx's successor), the older ones with httpx:
    # the transport errors they let through, or wrap as `__cause__`, are that library's.
    mod = importlib.import_module(module)
    return getattr(mod, "httpx2", None) or mod.httpx


openai_http = _http_of("openai._base_client")
anthropic_http = _http_of("anthropic._base_client")
genai_http = _http_of("google.genai._api_client")
