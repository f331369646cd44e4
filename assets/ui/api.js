// Talking to the daemon: `/v1/*` and `/ui/api/*` on this origin, authenticated by the
// session cookie; every request that changes state carries the CSRF header.

let csrf = null;
let csrfHeader = "x-flakestorm-csrf";
export let loopback = true;

/** Thrown (and announced to the page) when the session is missing, stale or forged. */
export class Unauthorized extends Error {}

function remember(about) {
  csrf = about.csrf;
  csrfHeader = about.csrf_header || csrfHeader;
  loopback = !!about.loopback;
}

/** Trades the token for the session cookie (the token itself is not kept). */
export async function login(token) {
  const r = await fetch("/ui/api/login", {
    method: "POST",
    headers: { authorization: `Bearer ${token.trim()}` },
    credentials: "same-origin",
  });
  if (!r.ok) throw new Unauthorized(await message(r));
  remember(await r.json());
}

/** Whether the cookie is a session: its CSRF value, or Unauthorized. */
export async function session() {
  remember(await call("GET", "/ui/api/session"));
}

export async function logout() {
  await call("POST", "/ui/api/logout").catch(() => {});
  csrf = null;
}

async function message(r) {
  try {
    const b = await r.json();
    const e = new Error(b.error?.message || `${r.status}`);
    e.errors = b.error?.errors;
    e.code = b.error?.code;
    return e.message;
  } catch {
    return `${r.status} ${r.statusText}`;
  }
}

/** A call: JSON back, or an Error with the API's message (and `errors` at their paths). */
export async function call(method, path, body, type = "application/json") {
  const headers = {};
  if (method !== "GET" && csrf) headers[csrfHeader] = csrf;
  let payload;
  if (body !== undefined) {
    headers["content-type"] = type;
    payload = typeof body === "string" ? body : JSON.stringify(body);
  }
  const r = await fetch(path, { method, headers, body: payload, credentials: "same-origin" });
  if (r.status === 401) {
    window.dispatchEvent(new Event("flakestorm-unauthorized"));
    throw new Unauthorized(await message(r));
  }
  if (r.status === 204) return null;
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!r.ok) {
    const e = new Error(json?.error?.message || `${r.status} ${r.statusText}`);
    e.errors = json?.error?.errors;
    e.code = json?.error?.code;
    e.status = r.status;
    throw e;
  }
  return json;
}
