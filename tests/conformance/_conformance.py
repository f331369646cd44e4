"""Shared content and helpers of the conformance suite (imported by conftest and tests)."""

from __future__ import annotations

import json
import time

# --------------------------------------------------------------------------- content

# 40 words, sent as 8 stream events of 5 words each, so cut/truncate faults have room.
ANSWER_PIECES = [
    "The quick brown fox jumps ",
    "over the lazy dog while ",
    "the sun sets slowly behind ",
    "the distant purple mountains and ",
    "a gentle breeze carries the ",
    "scent of pine across the ",
    "quiet valley where shepherds rest ",
    "after a long working day.",
]
ANSWER = "".join(ANSWER_PIECES)
ANSWER_WORDS = ANSWER.split()
assert len(ANSWER_WORDS) == 40

TOOL_NAME = "get_weather"
# snake_case keys on purpose: response_drift json_field_rename turns them into camelCase.
TOOL_ARGS = {"city_name": "Paris", "unit": "celsius"}
TOOL_ARGS_JSON = json.dumps(TOOL_ARGS)
# Split in two fragments for streaming tool calls.
TOOL_ARGS_FRAGS = [TOOL_ARGS_JSON[:14], TOOL_ARGS_JSON[14:]]

USAGE_OPENAI = {"prompt_tokens": 12, "completion_tokens": 40, "total_tokens": 52}


def is_tools_model(model: str) -> bool:
    return "tools" in model


# --------------------------------------------------------------------- response bodies


def openai_json(model: str) -> dict:
    if is_tools_model(model):
        msg = {
            "role": "assistant", "content": None, "refusal": None,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": TOOL_NAME, "arguments": TOOL_ARGS_JSON}}],
        }
        finish = "tool_calls"
    else:
        msg = {"role": "assistant", "content": ANSWER, "refusal": None}
        finish = "stop"
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None, "message": msg}],
        "usage": USAGE_OPENAI,
    }


def openai_sse(model: str, include_usage: bool = False) -> list[bytes]:
    def chunk(delta: dict, finish: str | None) -> dict:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000,
                "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""}, None)]
    if is_tools_model(model):
        events.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                             "function": {"name": TOOL_NAME, "arguments": ""}}]}, None))
        for frag in TOOL_ARGS_FRAGS:
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": frag}}]}, None))
        events.append(chunk({}, "tool_calls"))
    else:
        events += [chunk({"content": p}, None) for p in ANSWER_PIECES]
        events.append(chunk({}, "stop"))
    if include_usage:
        events.append({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000,
                       "model": model, "choices": [], "usage": USAGE_OPENAI})
    frames = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    frames.append(b"data: [DONE]\n\n")
    return frames


# OpenAI's legacy Completions API (`POST /v1/completions`): the text in `choices[].text`,
# in the whole answer and in each chunk; the last chunk only finishes.
def openai_completion_json(model: str) -> dict:
    return {"id": "cmpl-1", "object": "text_completion", "created": 1_700_000_000, "model": model,
            "choices": [{"text": ANSWER, "index": 0, "logprobs": None, "finish_reason": "stop"}],
            "usage": USAGE_OPENAI}


def openai_completion_sse(model: str) -> list[bytes]:
    def chunk(text: str, finish: str | None) -> dict:
        return {"id": "cmpl-1", "object": "text_completion", "created": 1_700_000_000, "model": model,
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}]}

    events = [chunk(p, None) for p in ANSWER_PIECES] + [chunk("", "stop")]
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


# OpenAI Responses API (`POST /v1/responses`): a response object, and named SSE events that
# repeat the text in deltas, `*.done`, `output_item.*` and the final `response.completed`.
RESP_ID, MSG_ID, FC_ID, CALL_ID = "resp_1", "msg_1", "fc_1", "call_1"
USAGE_RESPONSES = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 40,
                   "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 52}


def responses_object(model: str, status: str, output: list, usage: dict | None) -> dict:
    return {
        "id": RESP_ID, "object": "response", "created_at": 1_700_000_000, "status": status,
        "background": False, "error": None, "incomplete_details": None, "instructions": None,
        "max_output_tokens": None, "max_tool_calls": None, "model": model, "output": output,
        "parallel_tool_calls": True, "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None}, "service_tier": "default", "store": True,
        "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
        "usage": usage, "user": None, "metadata": {},
    }


def responses_text_part(text: str) -> dict:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def responses_message(text: str | None, status: str = "completed") -> dict:
    content = [] if text is None else [responses_text_part(text)]
    return {"id": MSG_ID, "type": "message", "status": status, "role": "assistant", "content": content}


def responses_call(arguments: str, status: str = "completed") -> dict:
    return {"id": FC_ID, "type": "function_call", "status": status, "arguments": arguments,
            "call_id": CALL_ID, "name": TOOL_NAME}


def openai_responses_json(model: str) -> dict:
    item = responses_call(TOOL_ARGS_JSON) if is_tools_model(model) else responses_message(ANSWER)
    return responses_object(model, "completed", [item], USAGE_RESPONSES)


def openai_responses_sse(model: str) -> list[bytes]:
    events: list[dict] = []

    def ev(type_: str, **data) -> None:
        events.append({"type": type_, "sequence_number": len(events), **data})

    ev("response.created", response=responses_object(model, "in_progress", [], None))
    ev("response.in_progress", response=responses_object(model, "in_progress", [], None))
    if is_tools_model(model):
        ev("response.output_item.added", output_index=0, item=responses_call("", "in_progress"))
        for frag in TOOL_ARGS_FRAGS:
            ev("response.function_call_arguments.delta", item_id=FC_ID, output_index=0, delta=frag)
        ev("response.function_call_arguments.done", item_id=FC_ID, output_index=0, arguments=TOOL_ARGS_JSON)
        item = responses_call(TOOL_ARGS_JSON)
    else:
        where = {"item_id": MSG_ID, "output_index": 0, "content_index": 0}
        ev("response.output_item.added", output_index=0, item=responses_message(None, "in_progress"))
        ev("response.content_part.added", **where, part=responses_text_part(""))
        for p in ANSWER_PIECES:
            ev("response.output_text.delta", **where, delta=p, logprobs=[])
        ev("response.output_text.done", **where, text=ANSWER, logprobs=[])
        ev("response.content_part.done", **where, part=responses_text_part(ANSWER))
        item = responses_message(ANSWER)
    ev("response.output_item.done", output_index=0, item=item)
    ev("response.completed", response=responses_object(model, "completed", [item], USAGE_RESPONSES))
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def anthropic_json(model: str) -> dict:
    if is_tools_model(model):
        content = [{"type": "text", "text": "Let me check."},
                   {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": TOOL_ARGS}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": ANSWER}]
        stop = "end_turn"
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 40}}


def anthropic_sse(model: str) -> list[bytes]:
    def ev(name: str, data: dict) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    out = [ev("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}})]
    if is_tools_model(model):
        out.append(ev("content_block_start", {"type": "content_block_start", "index": 0,
                                              "content_block": {"type": "tool_use", "id": "toolu_1",
                                                                "name": TOOL_NAME, "input": {}}}))
        out.append(ev("ping", {"type": "ping"}))
        for frag in TOOL_ARGS_FRAGS:
            out.append(ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "input_json_delta", "partial_json": frag}}))
        stop = "tool_use"
    else:
        out.append(ev("content_block_start", {"type": "content_block_start", "index": 0,
                                              "content_block": {"type": "text", "text": ""}}))
        out.append(ev("ping", {"type": "ping"}))
        for p in ANSWER_PIECES:
            out.append(ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": p}}))
        stop = "end_turn"
    out.append(ev("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                    "usage": {"output_tokens": 40}}))
    out.append(ev("message_stop", {"type": "message_stop"}))
    return out


GEMINI_USAGE = {"promptTokenCount": 12, "candidatesTokenCount": 40, "totalTokenCount": 52}


def gemini_json(model: str) -> dict:
    if is_tools_model(model):
        parts = [{"functionCall": {"id": "fc_1", "name": TOOL_NAME, "args": TOOL_ARGS}}]
    else:
        parts = [{"text": ANSWER}]
    return {"candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": parts}}],
            "usageMetadata": GEMINI_USAGE, "modelVersion": model, "responseId": "r1"}


def gemini_sse(model: str) -> list[bytes]:
    def frame(parts: list, finish: str | None) -> bytes:
        cand: dict = {"index": 0, "content": {"role": "model", "parts": parts}}
        body: dict = {"candidates": [cand], "modelVersion": model, "responseId": "r1"}
        if finish:
            cand["finishReason"] = finish
            body["usageMetadata"] = GEMINI_USAGE
        return f"data: {json.dumps(body)}\r\n\r\n".encode()

    if is_tools_model(model):
        return [frame([{"text": "Checking."}], None),
                frame([{"functionCall": {"id": "fc_1", "name": TOOL_NAME, "args": TOOL_ARGS}}], "STOP")]
    pieces = ANSWER_PIECES
    return [frame([{"text": p}], None) for p in pieces[:-1]] + [frame([{"text": pieces[-1]}], "STOP")]


def ollama_final(model: str, content: str, tool_calls: list | None = None) -> dict:
    msg: dict = {"role": "assistant", "content": content}
    if tool_calls is not None:
        msg["tool_calls"] = tool_calls
    return {"model": model, "created_at": "2025-01-01T00:00:00Z", "message": msg, "done": True,
            "done_reason": "stop", "total_duration": 1_000_000, "load_duration": 1000,
            "prompt_eval_count": 12, "prompt_eval_duration": 1000, "eval_count": 40, "eval_duration": 1000}


def ollama_json(model: str) -> dict:
    if is_tools_model(model):
        return ollama_final(model, "", [{"function": {"name": TOOL_NAME, "arguments": TOOL_ARGS}}])
    return ollama_final(model, ANSWER)


def ollama_ndjson(model: str) -> list[bytes]:
    def line(obj: dict) -> bytes:
        return (json.dumps(obj) + "\n").encode()

    def part(msg: dict) -> dict:
        return {"model": model, "created_at": "2025-01-01T00:00:00Z", "message": msg, "done": False}

    if is_tools_model(model):
        return [line(part({"role": "assistant", "content": "",
                           "tool_calls": [{"function": {"name": TOOL_NAME, "arguments": TOOL_ARGS}}]})),
                line(ollama_final(model, ""))]
    return [line(part({"role": "assistant", "content": p})) for p in ANSWER_PIECES] + [line(ollama_final(model, ""))]



def ollama_generate_json(model: str) -> dict:
    final = ollama_final(model, "")
    del final["message"]
    final["response"] = ANSWER
    return final


def ollama_generate_ndjson(model: str) -> list[bytes]:
    base = {"model": model, "created_at": "2025-01-01T00:00:00Z"}
    lines = [{**base, "response": p, "done": False} for p in ANSWER_PIECES]
    final = ollama_final(model, "")
    del final["message"]
    final["response"] = ""
    return [(json.dumps(x) + "\n").encode() for x in lines + [final]]


class Timer:
    def __enter__(self):
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.monotonic() - self.t0
        return False
