// The page's shell: logging in (the printed link's #token=…, or a pasted token), the
// pages by their address (#/runs, #/run/ID, #/compare, #/chaos, #/start), and back to the
// login whenever the daemon says the session is not one (stale or forged cookie).

import * as api from "./api.js";
import { h, show, problem } from "./dom.js";
import { runsPage } from "./runs.js";
import { runPage } from "./run.js";
import { comparePage } from "./compare.js";
import { chaosPage } from "./chaos.js";
import { startPage } from "./start.js";

let leave = null; // what the current page stops when another is shown (streams, timers)

function loginPage(why) {
  nav(false);
  const input = h("input", { id: "token", type: "password", autocomplete: "off", required: true, spellcheck: "false" });
  const out = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "card login", onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      await api.login(input.value);
      enter();
    } catch (e) {
      out.replaceChildren(problem(e));
    }
  } },
  h("h1", {}, "Log in"),
  h("p", {}, "Open the link ", h("code", {}, "flakestorm serve"), " printed (it carries the token), or paste the control token (",
    h("code", {}, "data_dir/control.token"), ", or ", h("code", {}, "control.token"), ")."),
  why ? h("p", { class: "dim", id: "login-why" }, why) : null,
  h("label", { for: "token" }, "Control token"), input,
  h("button", { type: "submit" }, "Log in"), out);
  show(form);
  input.focus();
}

function nav(on) {
  document.getElementById("nav").hidden = !on;
}

async function route() {
  if (leave) { leave(); leave = null; }
  const hash = location.hash || "#/runs";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  for (const a of document.querySelectorAll("#nav a")) {
    a.toggleAttribute("aria-current", a.getAttribute("href") === `#/${parts[0]}`);
  }
  const pages = {
    runs: () => runsPage(params),
    run: () => runPage(decodeURIComponent(parts[1] || "")),
    compare: () => comparePage(params),
    chaos: () => chaosPage(),
    start: () => startPage(),
  };
  const page = pages[parts[0]] || pages.runs;
  try {
    leave = (await page()) || null;
  } catch (e) {
    if (e instanceof api.Unauthorized) return loginPage("Your session has ended: log in again.");
    show(problem(e));
  }
  document.getElementById("main").focus({ preventScroll: true });
}

async function start() {
  window.addEventListener("flakestorm-unauthorized", () => {
    if (leave) { leave(); leave = null; }
    loginPage("Your session is not valid (the daemon's token changed, or the cookie was not its own): log in again.");
  });
  document.getElementById("logout").addEventListener("click", async () => {
    await api.logout();
    loginPage("Logged out.");
  });
  // The printed link: #token=…, traded for the cookie at once and taken out of the
  // address bar and the history.
  const m = location.hash.match(/^#token=([^&]+)/);
  if (m) {
    history.replaceState(null, "", `${location.pathname}#/runs`);
    try {
      await api.login(decodeURIComponent(m[1]));
    } catch (e) {
      return loginPage("The link's token was refused: " + e.message);
    }
  } else {
    try {
      await api.session();
    } catch (e) {
      return loginPage(e instanceof api.Unauthorized ? null : String(e.message || e));
    }
  }
  enter();
}

let listening = false;
function enter() {
  nav(true);
  if (!listening) window.addEventListener("hashchange", route);
  listening = true;
  route();
}

start();
