"""flakestorm's tapes read by an independent HAR reader (haralyzer).

`flakestorm serve --record DIR` proxies a tool call and a streamed (SSE) LLM call from a
stdlib client; after SIGTERM the tape it wrote must be HAR 1.2 that haralyzer reads
(version, creator, entries, requests, responses, bodies, start times and timings), with
every field the HAR 1.2 spec requires, flakestorm's own fields prefixed with `_`, the SSE
events with their offsets, and the canary secret sent in a header, a `?key=` query and the
body nowhere in the file.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from haralyzer import HarParser

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pyharness"))
import flakestorm_harness as harness  # noqa: E402

CANARY = "sk-canary-5e1d0b77"

# HAR 1.2's required fields (http://www.softwareishard.com/blog/har-12-spec/).
REQUIRED = {
    "log": ["version", "creator", "entries"],
    "creator": ["name", "version"],
    "entry": ["startedDateTime", "time", "request", "response", "cache", "timings"],
    "request": ["method", "url", "httpVersion", "cookies", "headers", "queryString",
                "headersSize", "bodySize"],
    "response": ["status", "statusText", "httpVersion", "cookies", "headers", "content",
                 "redirectURL", "headersSize", "bodySize"],
    "content": ["size", "mimeType"],
    "timings": ["send", "wait", "receive"],
}


class _Handler(harness.OriginHandler):
    def _handle(self):
        body = self._read_body()
        if self.command == "POST":
            self._start_chunked("text/event-stream")
            for n in range(3):
                self._write_chunk(f"data: {{\"n\": {n}}}\n\n".encode())
            self._write_chunk(b"data: [DONE]\n\n")
            return self._end_chunked()
        out = json.dumps({"results": ["ACME Q3 revenue was $4.1B"], "echo": body.decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = _handle


def _opener(proxy: str):
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))


def test_a_recorded_tape_is_har_1_2_that_haralyzer_reads(tmp_path):
    origin = harness.Origin(False, _Handler)
    tapes = tmp_path / "tapes"
    llm = f"llm:\n  - {{provider: openai, match_url: ['http://127.0.0.1:{origin.port}/v1/*']}}\n"
    fs = harness.Flakestorm.start(tmp_path, harness.clean_env(), llm, ("--record", str(tapes)))
    try:
        opener = _opener(fs.proxy_url)
        base = origin.url("127.0.0.1")
        tool = urllib.request.Request(f"{base}/search?q=acme&key={CANARY}",
                                      headers={"Authorization": f"Bearer {CANARY}"})
        with opener.open(tool, timeout=10) as r:
            assert json.loads(r.read())["results"] == ["ACME Q3 revenue was $4.1B"]
        chat = urllib.request.Request(
            f"{base}/v1/chat/completions", method="POST",
            data=json.dumps({"model": "m", "stream": True,
                             "messages": [{"role": "user", "content": f"key {CANARY}"}],
                             "api_key": CANARY}).encode(),
            headers={"Content-Type": "application/json", "x-api-key": CANARY})
        with opener.open(chat, timeout=10) as r:
            assert r.read().endswith(b"data: [DONE]\n\n")
    finally:
        fs.stop()
        origin.close()

    [tape] = list(tapes.iterdir())
    text = tape.read_text()
    assert CANARY not in text
    assert "[REDACTED]" in text

    parser = HarParser.from_file(str(tape))
    assert parser.version == "1.2"
    assert parser.creator["name"] == "flakestorm"
    [page] = parser.pages  # no pages in the tape: haralyzer's page of page-less entries
    entries = page.entries
    assert [e.request.method for e in entries] == ["GET", "POST"]
    get, post = entries
    assert get.request.url.endswith("/search?q=acme&key=[REDACTED]")
    assert {q["name"]: q["value"] for q in get.request.queryString} == {"q": "acme", "key": "[REDACTED]"}
    assert get.response.status == 200 and get.response.mimeType == "application/json"
    assert "ACME Q3 revenue" in get.response.text
    assert get.startTime is not None and get.startTime <= post.startTime
    assert post.request.mimeType == "application/json"
    assert '"api_key": "[REDACTED]"' in post.request.text
    assert post.response.text.endswith("data: [DONE]\n\n")
    assert len(page.post_requests) == 1

    raw = json.loads(text)["log"]
    for key in REQUIRED["log"]:
        assert key in raw, key
    for key in REQUIRED["creator"]:
        assert key in raw["creator"], key
    for e in raw["entries"]:
        for part, fields in (("entry", e), ("request", e["request"]), ("response", e["response"]),
                             ("content", e["response"]["content"]), ("timings", e["timings"])):
            for key in REQUIRED[part]:
                assert key in fields, f"{part}.{key}"
        assert e["time"] >= 0 and e["timings"]["wait"] >= 0
        extra = [k for k in e if k not in REQUIRED["entry"] and k != "pageref"]
        assert all(k.startswith("_") for k in extra), extra
    assert raw["entries"][0]["_target"] == "other"
    assert raw["entries"][1]["_target"] == "openai"
    events = raw["entries"][1]["response"]["content"]["_events"]
    assert [ev["text"] for ev in events] == [f'data: {{"n": {n}}}\n\n' for n in range(3)] + ["data: [DONE]\n\n"]
    offsets = [ev["offsetMs"] for ev in events]
    assert offsets == sorted(offsets) and offsets[0] >= 0
