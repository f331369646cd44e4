"""Token usage (issue #49) read by flakestorm from each provider's answers as the real SDKs
receive them, streamed and not: `flakestorm_llm_tokens_total{provider,model,kind}` grows by
exactly what the SDK itself reports (the origins report 12 input and 40 output tokens), an
Anthropic stream's input from `message_start` and output from `message_delta`, an OpenAI
stream's from its last chunk (only when the request asks for it: otherwise the answer is
counted in `flakestorm_llm_usage_unknown_total`, never as 0 tokens)."""

from __future__ import annotations

import time

IN, OUT = 12, 40
MSG = [{"role": "user", "content": "Tell me a story."}]
TOKENS = "flakestorm_llm_tokens_total"
UNKNOWN = "flakestorm_llm_usage_unknown_total"


def counts(fs, provider: str, model: str) -> tuple[float, float, float]:
    return (fs.metric(TOKENS, provider=provider, model=model, kind="input"),
            fs.metric(TOKENS, provider=provider, model=model, kind="output"),
            fs.metric(UNKNOWN, provider=provider))


def grew(fs, provider: str, model: str, before, want: tuple[int, int, int]) -> tuple[int, ...]:
    """How much the counters grew once they reached `want` (counted as the body ends,
    which may be just after the SDK read it), or after 5 s."""
    deadline = time.monotonic() + 5
    while True:
        got = tuple(int(a - b) for a, b in zip(counts(fs, provider, model), before))
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


def test_openai_chat_json_and_stream(openai_client, flakestorm):
    c = openai_client()
    before = counts(flakestorm, "openai", "gpt-test")
    r = c.chat.completions.create(model="gpt-test", messages=MSG)
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (IN, OUT)
    assert grew(flakestorm, "openai", "gpt-test", before, (IN, OUT, 0)) == (IN, OUT, 0)
    before = counts(flakestorm, "openai", "gpt-test")
    chunks = list(c.chat.completions.create(model="gpt-test", messages=MSG, stream=True,
                                            stream_options={"include_usage": True}))
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (IN, OUT)
    assert grew(flakestorm, "openai", "gpt-test", before, (IN, OUT, 0)) == (IN, OUT, 0)


def test_openai_stream_without_usage_is_unknown_not_zero(openai_client, flakestorm):
    c = openai_client()
    before = counts(flakestorm, "openai", "gpt-test")
    chunks = list(c.chat.completions.create(model="gpt-test", messages=MSG, stream=True))
    assert all(ch.usage is None for ch in chunks)
    assert grew(flakestorm, "openai", "gpt-test", before, (0, 0, 1)) == (0, 0, 1)


def test_openai_responses_json_and_stream(openai_client, flakestorm):
    c = openai_client()
    before = counts(flakestorm, "openai", "gpt-test")
    r = c.responses.create(model="gpt-test", input="Tell me a story.")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (IN, OUT)
    assert grew(flakestorm, "openai", "gpt-test", before, (IN, OUT, 0)) == (IN, OUT, 0)
    before = counts(flakestorm, "openai", "gpt-test")
    events = list(c.responses.create(model="gpt-test", input="Tell me a story.", stream=True))
    done = events[-1].response.usage
    assert (done.input_tokens, done.output_tokens) == (IN, OUT)
    assert grew(flakestorm, "openai", "gpt-test", before, (IN, OUT, 0)) == (IN, OUT, 0)


def test_anthropic_json_and_stream_split_across_events(anthropic_client, flakestorm):
    c = anthropic_client()
    before = counts(flakestorm, "anthropic", "claude-test")
    r = c.messages.create(model="claude-test", max_tokens=1024, messages=MSG)
    assert (r.usage.input_tokens, r.usage.output_tokens) == (IN, OUT)
    assert grew(flakestorm, "anthropic", "claude-test", before, (IN, OUT, 0)) == (IN, OUT, 0)
    before = counts(flakestorm, "anthropic", "claude-test")
    with c.messages.stream(model="claude-test", max_tokens=1024, messages=MSG) as s:
        final = s.get_final_message()
    # message_start said 12 in and 1 out; message_delta 40 out, cumulative.
    assert (final.usage.input_tokens, final.usage.output_tokens) == (IN, OUT)
    assert grew(flakestorm, "anthropic", "claude-test", before, (IN, OUT, 0)) == (IN, OUT, 0)


def test_gemini_json_and_stream(genai_client, flakestorm):
    c = genai_client()
    before = counts(flakestorm, "gemini", "gemini-test")
    r = c.models.generate_content(model="gemini-test", contents="Tell me a story.")
    assert (r.usage_metadata.prompt_token_count, r.usage_metadata.candidates_token_count) == (IN, OUT)
    assert grew(flakestorm, "gemini", "gemini-test", before, (IN, OUT, 0)) == (IN, OUT, 0)
    before = counts(flakestorm, "gemini", "gemini-test")
    chunks = list(c.models.generate_content_stream(model="gemini-test", contents="Tell me a story."))
    last = chunks[-1].usage_metadata
    assert (last.prompt_token_count, last.candidates_token_count) == (IN, OUT)
    assert grew(flakestorm, "gemini", "gemini-test", before, (IN, OUT, 0)) == (IN, OUT, 0)


def test_ollama_json_and_stream(ollama_client, flakestorm):
    c = ollama_client()
    before = counts(flakestorm, "ollama", "llama-test")
    r = c.chat(model="llama-test", messages=MSG, stream=False)
    assert (r.prompt_eval_count, r.eval_count) == (IN, OUT)
    assert grew(flakestorm, "ollama", "llama-test", before, (IN, OUT, 0)) == (IN, OUT, 0)
    before = counts(flakestorm, "ollama", "llama-test")
    parts = list(c.chat(model="llama-test", messages=MSG, stream=True))
    assert (parts[-1].prompt_eval_count, parts[-1].eval_count) == (IN, OUT)
    assert grew(flakestorm, "ollama", "llama-test", before, (IN, OUT, 0)) == (IN, OUT, 0)
