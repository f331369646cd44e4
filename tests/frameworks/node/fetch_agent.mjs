// A research agent on Node's global `fetch` alone, as many Node agents are written: no
// proxy dispatcher, no NODE_USE_ENV_PROXY, so Node 20's fetch goes straight to its
// targets whatever HTTPS_PROXY says (docs/capture.md: `agent.capture: netns` captures it).
// It trusts NODE_EXTRA_CA_CERTS, as Node does by itself.
//
//     node fetch_agent.mjs PORT
//
// * `POST /invoke {"input": "..."}` -> `{"result": "<answer>"}`; `GET /health` -> 200
// The LLM is an OpenAI-compatible Chat Completions API at OPENAI_BASE_URL (JSON); the
// tool `web_search` is TOOL_URL. A failed tool call is handed to the model as the tool's
// result; a failed LLM call is HTTP 500.
import http from "node:http";

const tools = [{
  type: "function",
  function: {
    name: "web_search",
    description: "Search the web.",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  },
}];

async function webSearch(query) {
  try {
    const r = await fetch(`${process.env.TOOL_URL}?q=${encodeURIComponent(query)}`);
    if (!r.ok) return `web_search failed: HTTP ${r.status}`;
    return (await r.json()).results.join("\n");
  } catch (e) {
    return `web_search failed: ${e.message}`;
  }
}

async function llm(messages) {
  const r = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
    body: JSON.stringify({ model: "gpt-4o-mini", messages, tools }),
  });
  if (!r.ok) throw new Error(`LLM answered HTTP ${r.status}: ${(await r.text()).slice(0, 200)}`);
  return (await r.json()).choices[0].message;
}

async function answer(input) {
  const messages = [{ role: "user", content: input }];
  for (let turn = 0; turn < 4; turn++) {
    const msg = await llm(messages);
    messages.push(msg);
    if (!msg.tool_calls?.length) return msg.content ?? "";
    for (const call of msg.tool_calls) {
      const { query } = JSON.parse(call.function.arguments || "{}");
      messages.push({ role: "tool", tool_call_id: call.id, content: await webSearch(query) });
    }
  }
  return "no answer";
}

http.createServer(async (req, res) => {
  const send = (status, obj) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(obj));
  };
  if (req.method === "GET" && req.url === "/health") return send(200, { ok: true });
  if (req.method !== "POST" || req.url !== "/invoke") return send(404, { error: "not found" });
  let body = "";
  for await (const chunk of req) body += chunk;
  try {
    send(200, { result: await answer(JSON.parse(body || "{}").input ?? "") });
  } catch (e) {
    send(500, { error: `${e.name}: ${e.message}` });
  }
}).listen(Number(process.argv[2]), "127.0.0.1");
