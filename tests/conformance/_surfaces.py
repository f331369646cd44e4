"""One call per SDK surface, plain or streamed, for the tests that check a fault on every
surface (test_refusals_every_surface.py, test_slow_answer_every_surface.py)."""

from __future__ import annotations

MSG = [{"role": "user", "content": "Tell me a story."}]
PROMPT = "Tell me a story."


def run_openai_chat(c, streamed):
    if streamed:
        return "".join(ch.choices[0].delta.content or "" for ch in
                       c.chat.completions.create(model="gpt-test", messages=MSG, stream=True) if ch.choices)
    return c.chat.completions.create(model="gpt-test", messages=MSG).choices[0].message.content


def run_openai_completions(c, streamed):
    kw = {"model": "gpt-3.5-turbo-instruct", "prompt": PROMPT}
    if streamed:
        return "".join(ch.choices[0].text or "" for ch in c.completions.create(stream=True, **kw) if ch.choices)
    return c.completions.create(**kw).choices[0].text


def run_openai_responses(c, streamed):
    if streamed:
        return "".join(e.delta for e in c.responses.create(model="gpt-test", input=PROMPT, stream=True)
                       if e.type == "response.output_text.delta")
    return c.responses.create(model="gpt-test", input=PROMPT).output_text


def run_anthropic(c, streamed):
    kw = {"model": "claude-test", "max_tokens": 1024, "messages": MSG}
    if streamed:
        return "".join(e.delta.text for e in c.messages.create(stream=True, **kw)
                       if e.type == "content_block_delta" and e.delta.type == "text_delta")
    return "".join(b.text for b in c.messages.create(**kw).content if b.type == "text")


def run_genai(c, streamed):
    if streamed:
        return "".join(ch.text or "" for ch in c.models.generate_content_stream(model="gemini-test", contents=PROMPT))
    return c.models.generate_content(model="gemini-test", contents=PROMPT).text


def run_ollama_chat(c, streamed):
    if streamed:
        return "".join(p.message.content or "" for p in c.chat(model="llama-test", messages=MSG, stream=True))
    return c.chat(model="llama-test", messages=MSG, stream=False).message.content


def run_ollama_generate(c, streamed):
    if streamed:
        return "".join(p.response or "" for p in c.generate(model="llama-test", prompt=PROMPT, stream=True))
    return c.generate(model="llama-test", prompt=PROMPT, stream=False).response


# surface -> (provider, client fixture, call, the SDK family for the expectations below)
SURFACES = {
    "openai chat": ("openai", "openai_client", run_openai_chat, "openai"),
    "openai responses": ("openai", "openai_client", run_openai_responses, "openai"),
    "openai completions": ("openai", "openai_client", run_openai_completions, "openai"),
    "anthropic messages": ("anthropic", "anthropic_client", run_anthropic, "anthropic"),
    "genai generate_content": ("gemini", "genai_client", run_genai, "genai"),
    "ollama chat": ("ollama", "ollama_client", run_ollama_chat, "ollama"),
    "ollama generate": ("ollama", "ollama_client", run_ollama_generate, "ollama"),
}
