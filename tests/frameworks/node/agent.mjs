// A research agent as Node users write one, behind a small HTTP API.
//
//     node agent.mjs PORT   (from tests/frameworks/node, after `npm ci` there)
//
// * `POST /invoke {"input": "..."}` -> `{"result": "<the agent's answer>"}`
// * `GET /health` -> 200
//
// The model is the `openai` npm SDK, configured only the way its users configure it:
// OPENAI_BASE_URL and OPENAI_API_KEY (read by the SDK), its default retries (2, so 3
// attempts, honouring `retry-after`); `LLM_STREAMING=1` streams. `web_search` calls
// TOOL_URL with `fetch`. Node 20's
// `fetch` ignores HTTPS_PROXY, so the agent does what docs/frameworks.md says a Node user
// does: undici's EnvHttpProxyAgent as the global dispatcher, which reads the proxy
// variables flakestorm's `agent.command` sets (and NODE_EXTRA_CA_CERTS the CA).
//
// Failure handling, as a typical app has it: a failed tool call is handed to the model as
// the tool's result; anything the SDK throws once its retries are spent becomes HTTP 500.
import http from "node:http";
import OpenAI from "openai";
import { EnvHttpProxyAgent, setGlobalDispatcher } from "undici";

setGlobalDispatcher(new EnvHttpProxyAgent());

const client = new OpenAI();
const STREAMING = process.env.LLM_STREAMING === "1";
const TOOL_URL = process.env.TOOL_URL;
const tools = [{
  type: "function",
  function: {
    name: "web_search",
    description: "Search the web and return the top results.",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  },
}];

async function webSearch(query) {
  try {
    const r = await fetch(`${TOOL_URL}?q=${encodeURIComponent(query)}`);
    if (!r.ok) return `web_search failed: HTTP ${r.status}`;
    return (await r.json()).results.join("\n");
  } catch (e) {
    return `web_search failed: ${e.message}`;
  }
}

async function whole(messages) {
  const r = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools });
  return r.choices[0].message;
}

// The message a stream adds up to, as SDK users assemble it: text pieces, and each tool
// call's id, name and argument pieces by index.
async function streamed(messages) {
  const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools, stream: true });
  const msg = { role: "assistant", content: "", tool_calls: [] };
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta ?? {};
    msg.content += delta.content ?? "";
    for (const t of delta.tool_calls ?? []) {
      const call = (msg.tool_calls[t.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      call.id ||= t.id ?? "";
      call.function.name += t.function?.name ?? "";
      call.function.arguments += t.function?.arguments ?? "";
    }
  }
  if (!msg.tool_calls.length) delete msg.tool_calls;
  return msg;
}

async function answer(input) {
  const messages = [
    { role: "system", content: "Answer with web_search and cite it." },
    { role: "user", content: input },
  ];
  for (let turn = 0; turn < 4; turn++) {
    const msg = STREAMING ? await streamed(messages) : await whole(messages);
    messages.push(msg);
    if (!msg.tool_calls?.length) return msg.content ?? "";
    for (const call of msg.tool_calls) {
      const { query } = JSON.parse(call.function.arguments || "{}");
      messages.push({ role: "tool", tool_call_id: call.id, content: await webSearch(query ?? "") });
    }
  }
  return "I could not finish.";
}

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/health") {
    res.writeHead(200).end("ok");
    return;
  }
  if (req.method !== "POST" || req.url !== "/invoke") {
    res.writeHead(404).end();
    return;
  }
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", async () => {
    try {
      const result = await answer(JSON.parse(body).input);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ result }));
    } catch (e) {
      res.writeHead(500, { "content-type": "application/json" })
        .end(JSON.stringify({ error: `${e.constructor.name}: ${e.message}` }));
    }
  });
});
server.listen(Number(process.argv[2]), "127.0.0.1");
