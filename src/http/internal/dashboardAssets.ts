/**
 * The dashboard's page, script and style, shipped inside the package as
 * strings (no CDN, nothing fetched at run time but this server's own JSON):
 * plain HTML, JavaScript and CSS, one page whose views are picked by the URL's
 * hash — executions, one execution, instances, limits.
 *
 * @since 0.1.0
 */

const escape = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll("\"", "&quot;").replaceAll("'", "&#39;")

/**
 * The page, for a caller: its CSRF token and tenants go in `<meta>` tags the script reads.
 *
 * @category internal
 * @since 0.1.0
 */
export const page = (options: { readonly base: string; readonly csrf: string; readonly tenants: ReadonlyArray<string>; readonly tenantId: string }): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>baton dashboard</title>
<meta name="baton-base" content="${escape(options.base)}">
<meta name="baton-csrf" content="${escape(options.csrf)}">
<meta name="baton-tenants" content="${escape(JSON.stringify(options.tenants))}">
<meta name="baton-tenant" content="${escape(options.tenantId)}">
<link rel="stylesheet" href="${escape(options.base)}/app.css">
</head>
<body>
<header>
  <span class="brand">baton</span>
  <nav>
    <a href="#/executions" data-nav="executions">Executions</a>
    <a href="#/instances" data-nav="instances">Instances</a>
    <a href="#/limits" data-nav="limits">Limits</a>
  </nav>
  <span class="who" id="who"></span>
  <span class="live" id="live" title="live updates">●</span>
</header>
<main id="main"></main>
<script src="${escape(options.base)}/app.js"></script>
</body>
</html>
`

/**
 * The page's style.
 *
 * @category internal
 * @since 0.1.0
 */
export const style = `
:root { --fg: #1d2430; --muted: #5d6878; --line: #dde2ea; --bg: #f6f8fb; --card: #fff; --accent: #2f5bd3;
  --run: #1f7ae0; --pause: #c98400; --ok: #1f8a4c; --bad: #c23b3b; --gone: #6b7280; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: center; gap: 24px; padding: 10px 20px; background: #101828; color: #fff; }
header .brand { font-weight: 700; letter-spacing: .04em; }
header nav a { color: #c7d2fe; text-decoration: none; margin-right: 16px; }
header nav a.active { color: #fff; border-bottom: 2px solid #fff; }
header .who { margin-left: auto; color: #cbd5e1; }
header .live { color: #64748b; }
header .live.on { color: #22c55e; }
main { padding: 18px 20px; max-width: 1200px; }
h2 { margin: 4px 0 14px; font-size: 18px; }
h3 { margin: 18px 0 8px; font-size: 15px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin-bottom: 14px; }
form.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: end; }
label { display: flex; flex-direction: column; gap: 3px; font-size: 12px; color: var(--muted); }
label.check { flex-direction: row; align-items: center; gap: 6px; font-size: 14px; color: var(--fg); }
input, select, textarea { font: inherit; padding: 5px 7px; border: 1px solid var(--line); border-radius: 5px; background: #fff; color: var(--fg); }
textarea { font-family: ui-monospace, monospace; min-height: 70px; min-width: 320px; }
button { font: inherit; padding: 6px 12px; border-radius: 5px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
button:disabled { opacity: .5; cursor: default; }
table { width: 100%; border-collapse: collapse; background: var(--card); }
th, td { text-align: left; padding: 7px 9px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; }
tr.link { cursor: pointer; }
tr.link:hover td { background: #eef3ff; }
.mono { font-family: ui-monospace, monospace; font-size: 12.5px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; }
.badge.Running { background: var(--run); } .badge.Paused { background: var(--pause); } .badge.Finished { background: var(--ok); }
.badge.Failed { background: var(--bad); } .badge.Cancelled { background: var(--gone); }
.badge.Healthy { background: var(--ok); } .badge.Degraded { background: var(--pause); } .badge.Unhealthy { background: var(--bad); }
.muted { color: var(--muted); }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(180px, 1fr)); gap: 8px 18px; }
.grid div span { display: block; font-size: 12px; color: var(--muted); }
pre { background: #0f172a; color: #e2e8f0; padding: 10px; border-radius: 6px; overflow: auto; max-height: 320px; font-size: 12px; }
.bar { height: 8px; background: var(--run); border-radius: 4px; min-width: 2px; }
.pager { display: flex; gap: 8px; margin-top: 10px; }
.error { color: var(--bad); }
`

/**
 * The page's script (plain JavaScript, no build step, no imports).
 *
 * @category internal
 * @since 0.1.0
 */
export const script = String.raw`
"use strict";
(() => {
  const meta = (name) => document.querySelector('meta[name="' + name + '"]').content;
  const base = meta("baton-base");
  const csrf = meta("baton-csrf");
  const tenants = JSON.parse(meta("baton-tenants"));
  const main = document.getElementById("main");
  const liveDot = document.getElementById("live");
  document.getElementById("who").textContent = "tenant " + tenants.join(", ");
  let stop = () => {};

  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "text") node.textContent = String(v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return node;
  };
  const time = (ms) => (ms === null || ms === undefined ? "—" : new Date(ms).toISOString().replace("T", " ").replace("Z", ""));
  const duration = (ms) => (ms === null || ms === undefined ? "—" : ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s");
  const badge = (status) => el("span", { class: "badge " + status, "data-testid": "badge", text: status });

  const api = async (path, body) => {
    const init = body === undefined ? { credentials: "same-origin" } : {
      method: "POST", credentials: "same-origin", body: JSON.stringify(body),
      headers: { "content-type": "application/json", "x-baton-csrf": csrf }
    };
    const response = await fetch(base + path, init);
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error((data.error || response.status) + ": " + (data.message || ""));
    return data;
  };

  /** Server-sent events over fetch (so the app's credentials go along); stops with the view. */
  const follow = (path, onEvent) => {
    const controller = new AbortController();
    let lastId = null;
    const run = async () => {
      while (!controller.signal.aborted) {
        try {
          const headers = lastId === null ? {} : { "last-event-id": lastId };
          const response = await fetch(base + path, { credentials: "same-origin", headers, signal: controller.signal });
          if (!response.ok || response.body === null) throw new Error("stream " + response.status);
          liveDot.classList.add("on");
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = "";
          while (true) {
            const { done, value } = await reader.read();
            if (done) break;
            buffer += value;
            let i;
            while ((i = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, i);
              buffer = buffer.slice(i + 2);
              const fields = {};
              for (const line of block.split("\n")) {
                if (line.startsWith(":")) continue;
                const at = line.indexOf(": ");
                if (at > 0) fields[line.slice(0, at)] = line.slice(at + 2);
              }
              if (fields.id !== undefined) lastId = fields.id;
              if (fields.data !== undefined) onEvent(fields.event || "message", JSON.parse(fields.data));
            }
          }
        } catch (e) {
          if (controller.signal.aborted) return;
        }
        liveDot.classList.remove("on");
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    run();
    return () => { controller.abort(); liveDot.classList.remove("on"); };
  };

  // --- executions -------------------------------------------------------------------------------
  const executions = (params) => {
    const state = { cursors: [], cursor: null, filters: params };
    const form = el("form", { class: "filters card", "data-testid": "filters" },
      el("label", {}, "status", el("select", { name: "status" }, el("option", { value: "" }, "any"),
        ...["Running", "Paused", "Finished", "Failed", "Cancelled"].map((s) => el("option", { value: s, selected: params.get("status") === s }, s)))),
      el("label", {}, "workflow", el("input", { name: "workflow", value: params.get("workflow") || "", placeholder: "name" })),
      tenants.length > 1 ? el("label", {}, "tenant", el("select", { name: "tenant" }, ...tenants.map((t) => el("option", { value: t, selected: params.get("tenant") === t }, t)))) : null,
      el("label", {}, "thread", el("input", { name: "thread", value: params.get("thread") || "", placeholder: "thread id", "data-testid": "thread-search" })),
      el("label", {}, "created from", el("input", { name: "from", type: "datetime-local", value: params.get("from") || "" })),
      el("label", {}, "created before", el("input", { name: "to", type: "datetime-local", value: params.get("to") || "" })),
      el("button", { type: "submit" }, "Apply"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const q = new URLSearchParams();
      for (const [k, v] of new FormData(form)) if (v !== "") q.set(k, String(v));
      location.hash = "#/executions?" + q.toString();
    });
    const body = el("tbody", {});
    const pager = el("div", { class: "pager" });
    const info = el("div", { class: "muted" });
    main.replaceChildren(el("h2", {}, "Executions"), form,
      el("table", { "data-testid": "executions" }, el("thead", {}, el("tr", {}, ...["thread", "workflow", "status", "tenant", "created", "updated", "execution"].map((h) => el("th", {}, h)))), body),
      pager, info);
    const query = () => {
      const q = new URLSearchParams();
      for (const k of ["status", "workflow", "tenant", "thread"]) if (params.get(k)) q.set(k, params.get(k));
      for (const k of ["from", "to"]) if (params.get(k)) q.set(k, String(new Date(params.get(k)).getTime()));
      if (state.cursor) q.set("cursor", state.cursor);
      return q.toString();
    };
    const render = (page) => {
      body.replaceChildren(...page.executions.map((x) =>
        el("tr", { class: "link", "data-thread": x.threadId, "data-execution": x.executionId, onclick: () => { location.hash = "#/execution/" + encodeURIComponent(x.tenantId) + "/" + encodeURIComponent(x.executionId); } },
          el("td", { class: "mono" }, x.threadId), el("td", {}, x.workflowName + " v" + x.workflowVersion), el("td", {}, badge(x.status)),
          el("td", {}, x.tenantId), el("td", {}, time(x.createdAt)), el("td", {}, time(x.updatedAt)), el("td", { class: "mono muted" }, x.executionId))));
      if (page.executions.length === 0) body.replaceChildren(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "no executions match")));
      pager.replaceChildren(
        el("button", { class: "secondary", disabled: state.cursors.length === 0, onclick: () => { state.cursor = state.cursors.pop() || null; load(); } }, "← newer"),
        el("button", { class: "secondary", disabled: page.next === null, onclick: () => { state.cursors.push(state.cursor); state.cursor = page.next; load(); } }, "older →"));
    };
    let unfollow = () => {};
    const load = () => {
      unfollow();
      api("/api/executions?" + query()).then(render, (e) => info.replaceChildren(el("span", { class: "error" }, e.message)));
      unfollow = follow("/api/executions/live?" + query(), (event, data) => { if (event === "view") render(data); });
    };
    load();
    return () => unfollow();
  };

  // --- one execution ----------------------------------------------------------------------------
  /** A form for a value of the JSON Schema (objects of simple fields; JSON text for anything else). */
  const formFor = (schema) => {
    const plain = (s) => (s && Array.isArray(s.anyOf) ? s.anyOf.find((x) => x.type !== "null") || s : s || {});
    const fieldFor = (name, s0, required) => {
      const s = plain(s0);
      if (s.type === "boolean") {
        const input = el("input", { type: "checkbox", name });
        return { node: el("label", { class: "check" }, input, name), read: () => input.checked };
      }
      if (s.type === "string" && Array.isArray(s.enum)) {
        const input = el("select", { name }, ...s.enum.map((v) => el("option", { value: v }, v)));
        return { node: el("label", {}, name, input), read: () => input.value };
      }
      if (s.type === "string") {
        const input = el("input", { name, required: required });
        return { node: el("label", {}, name, input), read: () => (input.value === "" && !required ? undefined : input.value) };
      }
      if (s.type === "number" || s.type === "integer") {
        const input = el("input", { name, type: "number", step: s.type === "integer" ? "1" : "any", required: required });
        return { node: el("label", {}, name, input), read: () => (input.value === "" ? undefined : Number(input.value)) };
      }
      const input = el("textarea", { name, placeholder: "JSON" });
      return { node: el("label", {}, name + " (JSON)", input), read: () => (input.value.trim() === "" ? undefined : JSON.parse(input.value)) };
    };
    const s = plain(schema);
    if (s && s.type === "object" && s.properties) {
      const required = new Set(s.required || []);
      const fields = Object.entries(s.properties).map(([k, v]) => [k, fieldFor(k, v, required.has(k))]);
      return { nodes: fields.map(([, f]) => f.node), read: () => Object.fromEntries(fields.map(([k, f]) => [k, f.read()]).filter(([, v]) => v !== undefined)) };
    }
    if (schema) { const f = fieldFor("decision", schema, true); return { nodes: [f.node], read: f.read }; }
    const input = el("textarea", { name: "decision", placeholder: "the decision, as JSON (e.g. true or \"yes\")" });
    return { nodes: [el("label", {}, "decision (JSON)", input)], read: () => JSON.parse(input.value) };
  };

  const execution = (tenantId, executionId) => {
    main.replaceChildren(el("p", { class: "muted" }, "loading…"));
    let unfollow = () => {};
    let timer = null;
    let shownState = null;
    // Each pending pause's form, kept across the live re-renders: what the operator typed stays while the view updates.
    const forms = new Map();
    /** The form answering pause p of the execution whose status is s (its view v holds the decision JSON Schema). */
    const pauseForm = (p, s, v) => {
      const form = formFor(v.decisionSchema);
      const message = el("span", { class: "muted" });
      const submit = el("button", { type: "submit" }, "Answer");
      const node = el("form", { class: "card", "data-testid": "pause-form", "data-pause": p.pauseId },
        el("h3", {}, "Pending pause"), el("pre", {}, JSON.stringify(p.payload, null, 2)), ...form.nodes, el("p", {}, submit, " ", message));
      node.addEventListener("submit", (e) => {
        e.preventDefault();
        let decision;
        try { decision = form.read(); } catch (x) { message.textContent = "not JSON: " + x.message; return; }
        submit.disabled = true;
        message.textContent = "answering…";
        api("/api/resume", { tenantId: s.tenantId, pauseId: p.pauseId, decision }).then(() => { message.textContent = "answered"; }, (x) => { submit.disabled = false; message.textContent = x.message; });
      });
      return node;
    };
    const render = (v) => {
      const s = v.status;
      const head = el("div", { class: "card" },
        el("h2", {}, s.workflowName + " ", el("span", { "data-testid": "status" }, badge(s.status))),
        el("div", { class: "grid" },
          el("div", {}, el("span", {}, "execution"), el("code", { class: "mono" }, s.executionId)),
          el("div", {}, el("span", {}, "thread"), el("code", { class: "mono", "data-testid": "thread" }, s.threadId)),
          el("div", {}, el("span", {}, "tenant"), s.tenantId),
          el("div", {}, el("span", {}, "version"), s.workflowVersion),
          el("div", {}, el("span", {}, "created"), time(s.createdAt)),
          el("div", {}, el("span", {}, "updated"), time(s.updatedAt)),
          el("div", {}, el("span", {}, "held by"), s.holder ? s.holder.instanceId + " (epoch " + s.holder.epoch + ")" : "—"),
          s.error ? el("div", {}, el("span", {}, "error"), el("span", { class: "error" }, s.error.message)) : null),
        s.status === "Running" || s.status === "Paused"
          ? el("p", {}, el("button", { class: "danger", "data-testid": "cancel", onclick: (e) => {
              if (!confirm("Cancel this execution?")) return;
              e.target.disabled = true;
              api("/api/cancel", { tenantId: s.tenantId, threadId: s.threadId }).catch((x) => alert(x.message));
            } }, "Cancel execution"))
          : null);
      const pending = new Set(s.pendingPauses.map((p) => p.pauseId));
      for (const id of [...forms.keys()]) if (!pending.has(id)) forms.delete(id);
      const pauses = s.pendingPauses.map((p) => forms.get(p.pauseId) || forms.set(p.pauseId, pauseForm(p, s, v)).get(p.pauseId));
      const longest = Math.max(1, ...v.timeline.map((t) => t.durationMillis || 0));
      const statePre = el("pre", { "data-testid": "state" }, shownState === null ? "pick a step to see the state after it" : JSON.stringify(shownState, null, 2));
      const byId = new Map(v.states.map((x) => [x.id, x.state]));
      const timeline = el("table", { "data-testid": "timeline" },
        el("thead", {}, el("tr", {}, ...["step", "instance", "started", "duration", "", "outcome", "state"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...v.timeline.map((t) => el("tr", { "data-node": t.node },
          el("td", {}, t.node), el("td", { class: "mono" }, t.instanceId), el("td", {}, time(t.startedAt)), el("td", {}, duration(t.durationMillis)),
          el("td", { style: "width:140px" }, el("div", { class: "bar", style: "width:" + Math.round(((t.durationMillis || 0) / longest) * 140) + "px" })),
          el("td", {}, t.outcome),
          el("td", {}, t.stateEventId === null ? "—" : el("button", { class: "secondary", onclick: () => { shownState = byId.get(t.stateEventId); statePre.textContent = JSON.stringify(shownState, null, 2); } }, "state"))))));
      const states = el("table", { "data-testid": "states" },
        el("thead", {}, el("tr", {}, ...["after step", "instance", "at", ""].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...v.states.map((x) => el("tr", { "data-after": x.after },
          el("td", {}, x.after), el("td", { class: "mono" }, x.instanceId), el("td", {}, time(x.at)),
          el("td", {}, el("button", { class: "secondary", onclick: () => { shownState = x.state; statePre.textContent = JSON.stringify(x.state, null, 2); } }, "show"))))));
      main.replaceChildren(el("p", {}, el("a", { href: "#/executions" }, "← executions")), head, ...pauses,
        el("h3", {}, "Steps ", el("span", { class: "muted" }, v.timelineSource === "history" ? "(from the history store)" : "(from the live output)")),
        timeline, el("h3", {}, "State at a step"), states, statePre);
    };
    const load = () => api("/api/execution/" + encodeURIComponent(tenantId) + "/" + encodeURIComponent(executionId)).then((v) => {
      render(v);
      return v;
    }, (e) => { main.replaceChildren(el("p", { class: "error", "data-testid": "error" }, e.message)); return null; });
    let unview = () => {};
    load().then((v) => {
      if (v === null) return;
      // The thread's live output moves the page at once; the view's own SSE (every second) also without one.
      unfollow = follow("/api/stream/" + encodeURIComponent(tenantId) + "/" + encodeURIComponent(v.status.threadId), () => {
        clearTimeout(timer);
        timer = setTimeout(load, 150);
      });
      unview = follow("/api/execution/" + encodeURIComponent(tenantId) + "/" + encodeURIComponent(executionId) + "/live", (event, data) => {
        if (event === "view") render(data);
      });
    });
    return () => { unfollow(); unview(); clearTimeout(timer); };
  };

  // --- instances, limits ------------------------------------------------------------------------
  const components = (list) => el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "component"), el("th", {}, "status"), el("th", {}, "detail"))),
    el("tbody", {}, ...list.map((c) => el("tr", {}, el("td", {}, c.name), el("td", {}, badge(c.status)), el("td", {}, c.message)))));
  const instances = () => {
    const render = (v) => main.replaceChildren(el("h2", {}, "Instances"),
      el("div", { class: "card" }, el("h3", {}, "This instance: " + v.self.instanceId + " ", badge(v.self.readiness.status)), components(v.self.readiness.components)),
      el("h3", {}, "Instances holding trees"),
      v.instances.length === 0 ? el("p", { class: "muted" }, "no tree is running") : null,
      ...v.instances.map((i) => el("div", { class: "card", "data-instance": i.instanceId }, el("h3", {}, i.instanceId + " — " + i.trees.length + " tree" + (i.trees.length === 1 ? "" : "s")),
        el("table", {}, el("tbody", {}, ...i.trees.map((t) => el("tr", { class: "link", onclick: () => { location.hash = "#/execution/" + encodeURIComponent(t.tenantId) + "/" + encodeURIComponent(t.executionId); } },
          el("td", { class: "mono" }, t.threadId), el("td", {}, t.workflow), el("td", {}, "epoch " + t.epoch), el("td", {}, "lease " + duration(t.expiresInMillis))))))) ),
      v.waitingForRecovery.length > 0 ? el("p", { class: "muted" }, v.waitingForRecovery.length + " running tree(s) wait for a recovery (no live lease)") : null);
    api("/api/instances").then(render, (e) => main.replaceChildren(el("p", { class: "error" }, e.message)));
    return follow("/api/instances/live", (event, data) => { if (event === "view") render(data); });
  };
  const limits = () => {
    const render = (v) => main.replaceChildren(el("h2", {}, "Limits"),
      el("div", { class: "card" }, el("h3", {}, "Breakers, step slots and quotas (instance " + v.instanceId + ")"), v.limits.length === 0 ? el("p", { class: "muted" }, "none configured") : components(v.limits)),
      el("div", { class: "card" }, el("h3", {}, "Tenant budgets: spend"), el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "tenant"), el("th", {}, "today (UTC)"), el("th", {}, "in all"))),
        el("tbody", {}, ...v.spend.map((s) => el("tr", {}, el("td", {}, s.tenantId), el("td", {}, s.today), el("td", {}, s.lifetime)))))));
    api("/api/limits").then(render, (e) => main.replaceChildren(el("p", { class: "error" }, e.message)));
    return follow("/api/limits/live", (event, data) => { if (event === "view") render(data); });
  };

  const route = () => {
    stop();
    const hash = location.hash || "#/executions";
    const [path, q] = hash.slice(1).split("?");
    const parts = path.split("/").filter((p) => p !== "").map(decodeURIComponent);
    for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === (parts[0] === "execution" ? "executions" : parts[0]));
    if (parts[0] === "execution" && parts.length === 3) stop = execution(parts[1], parts[2]);
    else if (parts[0] === "instances") stop = instances();
    else if (parts[0] === "limits") stop = limits();
    else stop = executions(new URLSearchParams(q || ""));
  };
  window.addEventListener("hashchange", route);
  route();
})();
`
