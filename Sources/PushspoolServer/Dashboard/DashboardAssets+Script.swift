extension DashboardAssets {
    /// The page's script: a view per `#/…` address, each refreshed from the JSON routes every
    /// 1.5 s while the tab is visible. Text from jobs, registrations and providers goes into the
    /// page through `textContent` only (`h` below); nothing is parsed as HTML.
    static let script = #"""
"use strict";
(function () {
  const POLL_MS = 1500;
  let csrf = "";
  let current = null;
  let timer = null;
  let busy = false;

  // Elements from data: strings become text nodes, never markup.
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    if (props) {
      for (const k in props) {
        const v = props[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === "text") el.textContent = String(v);
        else if (k === "on") { for (const ev in v) el.addEventListener(ev, v[ev]); }
        else if (v === true) el.setAttribute(k, "");
        else el.setAttribute(k, String(v));
      }
    }
    append(el, children);
    return el;
  }
  function append(el, children) {
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) append(el, c);
      else if (c instanceof Node) el.appendChild(c);
      else el.appendChild(document.createTextNode(String(c)));
    }
  }
  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }
  function replace(el, ...children) { clear(el); append(el, children); }

  async function api(method, path, body) {
    const headers = { "Accept": "application/json" };
    const init = { method, headers, credentials: "same-origin" };
    if (method !== "GET") {
      headers["X-CSRF-Token"] = csrf;
      if (body !== undefined) { headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    }
    const r = await fetch(path, init);
    if (r.status === 401) { location.href = "/ui/login"; throw new Error("logged out"); }
    let json = null;
    try { json = await r.json(); } catch (e) { json = null; }
    return { status: r.status, json };
  }

  const num = v => (v === null || v === undefined) ? "—" : Number(v).toLocaleString();
  const pct = v => (v === null || v === undefined) ? "—" : (v * 100).toFixed(1) + "%";
  function duration(s) {
    if (s === null || s === undefined) return "—";
    if (s < 120) return s + " s";
    if (s < 7200) return Math.round(s / 60) + " min";
    return (s / 3600).toFixed(1) + " h";
  }
  function when(t) { if (!t) return "—"; const d = new Date(t); return isNaN(d) ? String(t) : d.toLocaleString(); }
  function stateBadge(state) {
    const s = String(state || "unknown");
    return h("span", { class: "state " + s.replace(/[^a-z]+/g, "-"), text: s, "data-state": s });
  }
  function progress(status) {
    const finished = status.finished, targets = status.targets;
    if (typeof targets === "number" && targets > 0) {
      return h("span", null, h("progress", { value: finished || 0, max: targets, "aria-label": "progress" }),
        h("span", { class: "muted", text: `${num(finished)} / ${num(targets)}` }));
    }
    if (typeof status.delivered === "number") return h("span", { class: "muted", text: `${num(status.delivered)} delivered` });
    return h("span", { class: "muted", text: "—" });
  }
  function kv(pairs) {
    const dl = h("dl", { class: "kv" });
    for (const [k, v] of pairs) {
      if (v === undefined) continue;
      dl.appendChild(h("dt", { text: k }));
      dl.appendChild(h("dd", null, v instanceof Node ? v : (v === null ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v))));
    }
    return dl;
  }
  function table(columns, rows, attrs) {
    const t = h("table", attrs || null);
    t.appendChild(h("thead", null, h("tr", null, columns.map(c => h("th", { class: c.num ? "num" : (c.narrow ? "hide-narrow" : null), scope: "col", text: c.title })))));
    const body = h("tbody");
    for (const r of rows) {
      const tr = h("tr", r.attrs || null);
      columns.forEach((c, i) => tr.appendChild(h("td", { class: c.num ? "num" : (c.narrow ? "hide-narrow" : null) }, r.cells[i])));
      body.appendChild(tr);
    }
    if (rows.length === 0) body.appendChild(h("tr", null, h("td", { colspan: columns.length, class: "muted", text: "nothing here" })));
    t.appendChild(body);
    return h("div", { class: "scroll" }, t);
  }
  function live(text) { replace(document.getElementById("live"), text || ("updated " + new Date().toLocaleTimeString())); }

  // ---- Campaigns ----
  const STATES = ["running", "paused", "pausing", "waiting", "scheduled", "waiting for wave", "waiting to resume", "cancelling",
    "not responding", "done", "cancelled", "failed"];
  function campaignsView(params) {
    const f = { state: params.get("state") || "", app: params.get("app") || "", q: params.get("q") || "", page: Number(params.get("page") || 1) };
    const stateSel = h("select", { id: "f-state", name: "state" }, h("option", { value: "", text: "every state" }), STATES.map(s => h("option", { value: s, text: s })));
    stateSel.value = f.state;
    const appSel = h("select", { id: "f-app", name: "app" }, h("option", { value: "", text: "every app" }));
    const text = h("input", { id: "f-q", name: "q", type: "search", value: f.q, placeholder: "id or text" });
    const list = h("div", { id: "campaigns" });
    const pager = h("div", { class: "pager" });
    let apps = [];
    const changed = () => { f.state = stateSel.value; f.app = appSel.value; f.q = text.value; f.page = 1; refresh(); };
    stateSel.addEventListener("change", changed);
    appSel.addEventListener("change", changed);
    let typing = null;
    text.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(changed, 300); });
    async function refresh() {
      const q = new URLSearchParams({ state: f.state, app: f.app, q: f.q, page: String(f.page) });
      const { json } = await api("GET", "/ui/api/jobs?" + q.toString());
      if (!json || !json.jobs) return;
      if (JSON.stringify(json.apps) !== JSON.stringify(apps)) {
        apps = json.apps;
        const keep = appSel.value;
        replace(appSel, h("option", { value: "", text: "every app" }), apps.map(a => h("option", { value: a, text: a })));
        appSel.value = keep;
      }
      const rows = json.jobs.map(j => {
        const s = j.status || {};
        return { attrs: { "data-id": j.id, "data-state": s.state || "" }, cells: [
          h("span", null, h("a", { href: "#/campaign/" + encodeURIComponent(j.id), text: j.id, class: "job-link" }),
            j.headline ? h("div", { class: "muted", text: j.headline }) : (j.secure ? h("div", { class: "muted", text: "secure: text not shown" }) : null)),
          stateBadge(s.state), progress(s),
          h("span", { class: "rate", text: s.rate_per_s === null || s.rate_per_s === undefined ? "—" : num(s.rate_per_s) + "/s" }),
          duration(s.eta_s), (j.apps || []).join(", ") || "—", (j.platforms || []).join(", ") || j.kind, when(j.file_time)] };
      });
      replace(list, table([{ title: "Campaign" }, { title: "State" }, { title: "Progress" }, { title: "Rate", num: true },
        { title: "ETA", num: true, narrow: true }, { title: "Apps", narrow: true }, { title: "Platforms" }, { title: "Time", narrow: true }], rows, { id: "campaign-table" }));
      const pages = Math.max(1, Math.ceil(json.total / json.per_page));
      replace(pager,
        h("button", { type: "button", class: "quiet", disabled: f.page <= 1, on: { click: () => { f.page--; refresh(); } } }, "Newer"),
        h("span", { id: "page-info", text: `page ${f.page} of ${pages} · ${num(json.total)} jobs` }),
        h("button", { type: "button", class: "quiet", disabled: f.page >= pages, on: { click: () => { f.page++; refresh(); } } }, "Older"));
      live();
    }
    const view = h("section", null, h("h1", { text: "Campaigns" }),
      h("form", { class: "filters", role: "search", on: { submit: e => { e.preventDefault(); changed(); } } },
        h("div", null, h("label", { for: "f-state", text: "State" }), stateSel),
        h("div", null, h("label", { for: "f-app", text: "App" }), appSel),
        h("div", null, h("label", { for: "f-q", text: "Search" }), text)),
      list, pager);
    return { view, refresh };
  }

  // ---- One campaign ----
  function funnelTable(title, groups) {
    const names = Object.keys(groups || {});
    if (names.length === 0) return null;
    return h("div", null, h("h3", { text: title }), table(
      [{ title: "" }, { title: "Targets", num: true }, { title: "Sent", num: true }, { title: "Delivered", num: true },
       { title: "Received", num: true }, { title: "Opened", num: true }, { title: "Open rate", num: true }],
      names.map(n => { const c = groups[n]; return { attrs: { "data-group": n }, cells: [n, num(c.targets), num(c.sent), num(c.delivered), num(c.received), num(c.opened), pct(c.rates && c.rates.opened)] }; })));
  }
  function campaignView(id) {
    const head = h("div");
    const confirmBox = h("div");
    const buttons = {
      pause: h("button", { type: "button", id: "pause", disabled: true, on: { click: () => confirmStep("pause", "Pause") } }, "Pause"),
      resume: h("button", { type: "button", id: "resume", disabled: true, on: { click: () => confirmStep("resume", "Resume") } }, "Resume"),
      cancel: h("button", { type: "button", id: "cancel", class: "danger", disabled: true,
        on: { click: () => confirmStep("cancel", "Cancel (what is not sent yet never will be)") } }, "Cancel"),
    };
    const actions = h("div", { class: "actions" }, buttons.pause, buttons.resume, buttons.cancel,
      h("a", { href: `/ui/api/jobs/${encodeURIComponent(id)}/results`, download: `${id}.ndjson`, text: "Result log (NDJSON)" }),
      h("a", { href: `/ui/api/jobs/${encodeURIComponent(id)}/results.csv`, download: `${id}.csv`, text: "Result log (CSV)" }));
    const message = h("div", { id: "action-message", "aria-live": "polite" });
    const body = h("div");
    let last = null;
    function confirmStep(verb, label, danger) {
      replace(confirmBox, h("div", { class: "confirm", role: "alertdialog", "aria-label": `Confirm ${verb}` },
        h("p", { text: `${label} campaign ${id}?` }),
        h("div", { class: "actions" },
          h("button", { type: "button", id: "confirm-yes", class: danger ? "danger" : null, on: { click: () => act(verb) } }, `Yes, ${verb}`),
          h("button", { type: "button", class: "quiet", id: "confirm-no", on: { click: () => clear(confirmBox) } }, "No"))));
      document.getElementById("confirm-yes").focus();
    }
    // A request's notice stays until the job has done it (its state reached, seen on a later
    // poll than the one right after the request) or has ended: never left on a finished job.
    let notice = null;
    async function act(verb) {
      clear(confirmBox);
      const { status, json } = await api("POST", `/ui/api/jobs/${encodeURIComponent(id)}/${verb}`);
      replace(message, h("p", { class: status === 202 ? "notice" : "error", text: status === 202 ? `${verb} requested: the job will be ${json.state}` : (json && json.error) || `${verb} failed (${status})` }));
      notice = status === 202 ? { state: json.state, polls: 0 } : null;
      refresh();
    }
    async function refresh() {
      const { status, json } = await api("GET", "/ui/api/jobs/" + encodeURIComponent(id));
      if (status !== 200 || !json) { replace(head, h("h1", { text: id }), h("p", { class: "error", text: (json && json.error) || "not found" })); return; }
      last = json;
      const s = json.status, job = json.job || {};
      replace(head, h("h1", null, id, " ", stateBadge(s.state)), h("div", { id: "job-progress" }, progress(s)));
      // The buttons stay the same elements (a keyboard's focus stays on them); only whether they apply changes.
      const ended = ["done", "cancelled", "failed"].includes(s.state);
      if (notice && (ended || (s.state === notice.state && notice.polls > 0))) { clear(message); notice = null; }
      if (notice) notice.polls++;
      buttons.pause.disabled = ended || s.state === "paused";
      buttons.resume.disabled = ended || s.state !== "paused";
      buttons.cancel.disabled = ended;
      const counts = kv([["Delivered", num(s.delivered)], ["Failed", num(s.failed)], ["Unregistered", s.unregistered === undefined ? undefined : num(s.unregistered)],
        ["Capped", s.capped === undefined ? undefined : num(s.capped)], ["Rate", s.rate_per_s === null || s.rate_per_s === undefined ? "—" : num(s.rate_per_s) + "/s"],
        ["ETA", duration(s.eta_s)], ["Matched", s.matched === undefined ? undefined : num(s.matched)], ["Not sent", s.not_sent === undefined ? undefined : num(s.not_sent)],
        ["Error", s.error === undefined ? undefined : s.error]]);
      counts.id = "counts";
      const what = kv([["Audience", job.audience], ["Apps", (job.apps || []).join(", ")], ["Platforms", (job.platforms || []).join(", ")],
        ["Title", job.secure ? "secure: not shown" : job.title], ["Message", job.secure ? "secure: not shown" : job.message],
        ["Data", job.data && Object.keys(job.data).length ? job.data : undefined], ["Languages", (job.languages || []).join(", ") || undefined],
        ["Local time", job.local_time ? `${job.local_time}${job.local_date ? " on " + job.local_date : ""}` : undefined],
        ["Not before", job.not_before ? when(job.not_before) : undefined], ["Tracked", job.track ? "yes" : undefined], ["Capped", job.capped ? "yes" : undefined]]);
      what.id = "job-fields";
      const f = s.funnel;
      const funnel = f ? h("div", { id: "funnel" },
        window.PushspoolCharts.funnel([{ label: "targets", value: f.targets }, { label: "sent", value: f.sent, rate: f.rates.sent },
          { label: "delivered", value: f.delivered, rate: f.rates.delivered }, { label: "received", value: f.received, rate: f.rates.received },
          { label: "opened", value: f.opened, rate: f.rates.opened }], "Funnel"),
        h("p", { class: "muted", id: "funnel-numbers", text: `targets ${f.targets} · sent ${f.sent} · delivered ${f.delivered} · received ${f.received} · opened ${f.opened}` }),
        funnelTable("Per platform", f.platforms), funnelTable("Per app", f.apps))
        : h("p", { class: "muted", text: s.funnel_error || "No funnel for this job (none recorded)." });
      const failures = table([{ title: "Platform" }, { title: "Outcome" }, { title: "Code" }, { title: "Reason" }, { title: "Count", num: true }, { title: "Meaning" }, { title: "What to do" }],
        json.failures.map(x => ({ cells: [x.platform, x.status, x.code, x.reason, num(x.count), x.meaning, x.action] })), { id: "failures" });
      const waves = (json.waves || []).filter(w => w.status !== "planned");
      const next = s.next_wave;
      const timeline = (waves.length || next) ? h("ul", { class: "timeline", id: "waves" },
        waves.map(w => h("li", { class: w.status }, `${when(w.at)} · ${w.status} · ${num(w.devices)} devices`, w.zones.length ? h("span", { class: "muted", text: " · " + w.zones.join(", ") }) : null, w.reason ? h("span", { class: "muted", text: " · " + w.reason }) : null)),
        next ? h("li", { class: "next" }, `${when(next.at)} · next · ${num(next.devices)} devices`) : null) : null;
      replace(body,
        h("div", { class: "grid" }, h("div", { class: "card" }, h("h2", { text: "Counts" }), counts), h("div", { class: "card" }, h("h2", { text: "The job" }), what)),
        h("div", { class: "card" }, h("h2", { text: "Funnel" }), funnel),
        h("div", { class: "card" }, h("h2", { text: "Sends over time" }), window.PushspoolCharts.series(json.series, "Sends per second over time"),
          h("div", { class: "legend" }, h("span", null, h("span", { class: "swatch delivered" }), "delivered"), h("span", null, h("span", { class: "swatch failed" }), "failed or unregistered"))),
        h("div", { class: "card" }, h("h2", { text: "Not delivered, by reason" }), failures),
        timeline ? h("div", { class: "card" }, h("h2", { text: "Waves (local time)" }), timeline) : null);
      live();
    }
    const view = h("section", null, h("p", null, h("a", { href: "#/campaigns", text: "← Campaigns" })), head, actions, confirmBox, message, body);
    return { view, refresh };
  }

  // ---- Compose ----
  const FIELD_OF = { to_tag: "audience", tags: "audience", broadcast: "audience", pns: "platforms", app: "app", message: "message", title: "title",
    localized: "languages", push_type: "push_type", local_time: "local_time", local_date: "local_date", capped: "capped", secure: "secure",
    placeholder: "placeholder", track: "track", from: "from" };
  function composeView() {
    const problems = {};
    const general = h("div", { id: "problems-general", class: "problem" });
    function field(name, label, input, hint) {
      problems[name] = h("p", { class: "problem", id: "problem-" + name, "aria-live": "polite" });
      input.setAttribute("aria-describedby", "problem-" + name);
      return h("div", { class: "field" }, h("label", { for: "c-" + name, text: label }), input, hint ? h("p", { class: "muted", text: hint }) : null, problems[name]);
    }
    const kind = h("select", { id: "c-kind" }, h("option", { value: "to_tag", text: "one tag" }), h("option", { value: "tags", text: "tag expression" }), h("option", { value: "broadcast", text: "everyone (broadcast)" }));
    const audience = h("input", { id: "c-audience", type: "text", placeholder: "news or (sports && fr) || vip" });
    const app = h("input", { id: "c-app", type: "text", placeholder: "default app; or ids, comma-separated, or *" });
    const platformBoxes = ["apns", "fcm", "wns", "web", "hms", "adm"].map(p => h("label", null, h("input", { type: "checkbox", value: p, id: "c-pns-" + p, checked: p === "apns" || p === "fcm" }), p));
    problems.platforms = h("p", { class: "problem", id: "problem-platforms" });
    const title = h("input", { id: "c-title", type: "text" });
    const message = h("textarea", { id: "c-message" });
    const languages = h("textarea", { id: "c-languages", placeholder: "fr: Bonjour\npt-BR: Olá" });
    const pushType = h("select", { id: "c-push_type" }, ["alert", "background"].map(t => h("option", { value: t, text: t })));
    const localTime = h("input", { id: "c-local_time", type: "text", placeholder: "HH:MM" });
    const localDate = h("input", { id: "c-local_date", type: "text", placeholder: "YYYY-MM-DD" });
    const capped = h("input", { id: "c-capped", type: "checkbox" });
    const secure = h("input", { id: "c-secure", type: "checkbox" });
    const track = h("input", { id: "c-track", type: "checkbox" });
    const placeholder = h("input", { id: "c-placeholder", type: "text" });
    const reach = h("div", { id: "reach" });
    const payloads = h("div", { id: "payloads" });
    const confirmBox = h("div");
    const result = h("div", { id: "send-result", "aria-live": "polite" });
    const sendButton = h("button", { type: "submit", id: "send", disabled: true }, "Send…");
    let lastPreview = null;

    function job() {
      const j = {};
      if (kind.value === "broadcast") j.broadcast = true; else j[kind.value] = audience.value.trim();
      const apps = app.value.split(",").map(s => s.trim()).filter(Boolean);
      if (apps.length === 1) j.app = apps[0]; else if (apps.length > 1) j.app = apps;
      j.pns = platformBoxes.map(l => l.firstChild).filter(b => b.checked).map(b => b.value);
      if (title.value.trim()) j.title = title.value;
      j.message = message.value;
      const loc = {};
      for (const line of languages.value.split("\n")) {
        const m = line.match(/^\s*([A-Za-z0-9-]+)\s*:\s*(.+)$/);
        if (m) loc[m[1]] = { message: m[2] };
      }
      if (Object.keys(loc).length) j.localized = loc;
      if (pushType.value !== "alert") j.push_type = pushType.value;
      if (localTime.value.trim()) j.local_time = localTime.value.trim();
      if (localDate.value.trim()) j.local_date = localDate.value.trim();
      if (capped.checked) j.capped = true;
      if (secure.checked) j.secure = true;
      if (track.checked) j.track = true;
      if (placeholder.value.trim()) j.placeholder = placeholder.value;
      return j;
    }
    function showProblems(list) {
      for (const k in problems) clear(problems[k]);
      clear(general);
      for (const p of list || []) {
        const root = String(p.field).split(/[.\[]/)[0];
        const target = problems[FIELD_OF[root]];
        const line = h("span", { class: "problem-line", "data-field": p.field, text: `${p.field}: ${p.message}` });
        if (target) { target.appendChild(line); } else { general.appendChild(h("p", null, line)); }
      }
    }
    let pending = null;
    async function preview() {
      const { status, json } = await api("POST", "/ui/api/preview", job());
      if (status !== 200 || !json) return;
      lastPreview = json;
      showProblems(json.problems);
      sendButton.disabled = !json.ok;
      replace(reach, json.ok ? [h("p", { id: "audience-total" }, h("strong", { text: num(json.devices) }), " devices now"),
        table([{ title: "App" }, { title: "Platform" }, { title: "Route" }, { title: "Devices", num: true }, { title: "Environments" }, { title: "Note" }],
          (json.reach || []).map(r => ({ attrs: { "data-platform": r.platform, "data-app": r.app }, cells: [r.app, r.platform, r.route, num(r.devices),
            r.environments ? Object.entries(r.environments).map(([k, v]) => `${k} ${v}`).join(", ") : "—", r.note || ""] })), { id: "reach-table" })]
        : h("p", { class: "muted", text: "Fix the fields marked above to see the audience." }));
      replace(payloads, (json.payloads || []).map(p => h("div", { class: "payload-block", "data-platform": p.platform },
        h("h3", { text: p.platform + (p.language ? ` [${p.language}]` : "") }), h("pre", { class: "payload", text: p.body }))));
    }
    function schedule() { clearTimeout(pending); clear(confirmBox); pending = setTimeout(preview, 350); }
    async function send() {
      clear(confirmBox);
      const { status, json } = await api("POST", "/ui/api/jobs", job());
      if (status === 202 || status === 200) {
        replace(result, h("p", { class: "notice" }, "Queued: ", h("a", { id: "queued-link", href: "#/campaign/" + encodeURIComponent(json.id), text: json.id })));
      } else {
        showProblems((json && json.problems) || [{ field: "job", message: (json && json.error) || `refused (${status})` }]);
        replace(result, h("p", { class: "error", text: "Nothing was queued." }));
      }
    }
    const form = h("form", { id: "compose", novalidate: true, on: { input: schedule, change: schedule, submit: e => {
      e.preventDefault();
      if (!lastPreview || !lastPreview.ok) return;
      replace(confirmBox, h("div", { class: "confirm", role: "alertdialog", "aria-label": "Confirm send" },
        h("p", { id: "confirm-text", text: `Send this message to ${num(lastPreview.devices)} devices now?` }),
        h("div", { class: "actions" }, h("button", { type: "button", id: "confirm-send", on: { click: send } }, `Yes, send to ${num(lastPreview.devices)} devices`),
          h("button", { type: "button", class: "quiet", on: { click: () => clear(confirmBox) } }, "No"))));
      document.getElementById("confirm-send").focus();
    } } },
      h("div", { class: "grid" },
        h("div", null,
          field("audience", "Audience", h("div", null, kind, " ", audience)),
          field("app", "Apps", app),
          h("fieldset", null, h("legend", { text: "Platforms" }), platformBoxes, problems.platforms),
          field("title", "Title", title),
          field("message", "Message", message),
          field("languages", "Other languages (one per line, lang: text)", languages),
          field("push_type", "Push type (APNs)", pushType),
          field("local_time", "Local time (each device's clock)", localTime),
          field("local_date", "Local date", localDate),
          h("fieldset", null, h("legend", { text: "Options" }),
            h("label", null, capped, "capped"), h("label", null, secure, "secure (the text never leaves this server)"), h("label", null, track, "track opens")),
          field("placeholder", "Placeholder (secure, iOS)", placeholder),
          general,
          h("div", { class: "actions" }, sendButton), confirmBox, result),
        h("div", null, h("div", { class: "card" }, h("h2", { text: "Audience now" }), reach), h("div", { class: "card" }, h("h2", { text: "What each platform receives" }), payloads))));
    const view = h("section", null, h("h1", { text: "Compose" }), form);
    preview();
    return { view, refresh: null };
  }

  // ---- Devices ----
  function devicesView() {
    const input = h("input", { id: "d-tags", type: "text", placeholder: "tag expression, e.g. news && fr" });
    const problem = h("p", { class: "problem", id: "problem-tags" });
    const out = h("div", { id: "device-counts" });
    function countTable(title, rows, total) {
      return h("div", { class: "card" }, h("h2", { text: title }), table([{ title: "" }, { title: "Devices", num: true }, { title: "" }],
        rows.map(r => ({ cells: [r.name, num(r.devices), h("span", { class: "bar", style: null, "data-share": String(r.devices / Math.max(1, total)) })] }))));
    }
    async function refresh() {
      const q = new URLSearchParams({ tags: input.value });
      const { json } = await api("GET", "/ui/api/devices?" + q.toString());
      if (!json) return;
      replace(problem, json.ok ? "" : (json.problems || []).map(p => p.message).join("; "));
      if (!json.ok) return;
      replace(out, h("p", null, h("strong", { id: "device-total", text: num(json.total) }), " devices match"),
        h("div", { class: "grid" }, countTable("Apps", json.apps, json.total), countTable("Platforms", json.platforms, json.total),
          countTable("APNs environments", json.environments, json.total), countTable("Languages", json.languages, json.total),
          countTable("Time zones", json.zones, json.total)));
      for (const bar of out.querySelectorAll(".bar")) bar.style.width = (Number(bar.dataset.share) * 8) + "rem";
      live();
    }
    let typing = null;
    input.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(refresh, 300); });
    const view = h("section", null, h("h1", { text: "Devices" }),
      h("div", { class: "field" }, h("label", { for: "d-tags", text: "Count the devices a tag expression matches" }), input, problem), out);
    return { view, refresh };
  }

  // ---- System ----
  function systemView() {
    const out = h("div", { id: "system" });
    function list(items) {
      if (!items || items.length === 0) return h("p", { class: "muted", text: "none" });
      return h("div", null, items.map(i => h("div", { class: "card" }, kv(Object.entries(i)))));
    }
    // Each provider as the running dispatchers reported it (`status --json`'s `providers`).
    function providers(items) {
      if (items.length === 0) return h("p", { class: "muted", text: "no dispatcher running: no connections" });
      const clock = t => { const d = new Date(t); return isNaN(d) ? String(t) : d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString(); };
      return h("div", { class: "grid providers" }, items.map(p => {
        const failed = Object.values(p.errors_total || {}).reduce((a, b) => a + b, 0);
        const rows = (p.recent_errors || []).map(e => ({ attrs: { class: "recent-error" }, cells: [
          h("span", { class: "at", text: clock(e.at) }), h("span", { class: "code", text: e.code }),
          h("span", null, h("span", { class: "reason", text: e.reason || "—" }), h("br"), h("span", { class: "meaning muted", text: e.meaning })),
          h("span", { class: "count", text: num(e.count) })] }));
        return h("div", { class: "card provider", "data-provider": p.provider },
          h("h3", { text: p.provider }),
          kv([["Connections", h("span", { class: "connections", text: num(p.connections) })], ["In flight", num(p.in_flight)],
              ["Failed answers", h("span", { class: "failed", text: num(failed) })]]),
          rows.length === 0 ? h("p", { class: "muted", text: "no failed answers" })
            : table([{ title: "Last at" }, { title: "Code" }, { title: "Reason and what it means" }, { title: "In a row", num: true }],
                rows, { class: "recent-errors" }));
      }));
    }
    async function refresh() {
      const { json } = await api("GET", "/ui/api/system");
      if (!json) return;
      replace(out,
        h("div", { class: "grid" },
          h("div", { class: "card" }, h("h2", { text: "Spool" }), kv([["Path", json.spool], ...Object.entries(json.folders).map(([k, v]) => [k, num(v)])])),
          h("div", { class: "card" }, h("h2", { text: "Registry" }), kv(Object.entries(json.registry || {}))),
          h("div", { class: "card" }, h("h2", { text: "Webhooks" }), kv([["Pending", num(json.webhooks.pending)], ["Given up", num(json.webhooks.failed)]])),
          h("div", { class: "card" }, h("h2", { text: "Rate caps" }), kv(Object.entries(json.rate_limits).map(([k, v]) => [k, v + "/s"]))),
        ),
        h("h2", { text: "Providers" }), providers(json.providers || []),
        h("h2", { text: "Dispatchers (queue hosts)" }), list(json.dispatchers),
        h("h2", { text: "Paused providers" }), list(json.paused_providers),
        json.queue ? h("div", { class: "card" }, h("h2", { text: "Shared queue" }), kv(Object.entries(json.queue))) : null,
        h("h2", { text: "Providers (from /metrics)" }),
        table([{ title: "Metric" }, { title: "Labels" }, { title: "Value", num: true }], json.metrics.map(m => ({ cells: [m.name, m.labels, m.value] }))));
      live();
    }
    return { view: h("section", null, h("h1", { text: "System" }), out), refresh };
  }

  // ---- Router ----
  function route() {
    const hash = location.hash || "#/campaigns";
    const [path, query] = hash.slice(1).split("?");
    const params = new URLSearchParams(query || "");
    const parts = path.split("/").filter(Boolean);
    let page = parts[0] || "campaigns";
    if (page === "campaign" && parts[1]) current = campaignView(decodeURIComponent(parts.slice(1).join("/")));
    else if (page === "compose") current = composeView();
    else if (page === "devices") current = devicesView();
    else if (page === "system") current = systemView();
    else { page = "campaigns"; current = campaignsView(params); }
    for (const a of document.querySelectorAll("nav a")) {
      if (a.dataset.page === page || (page === "campaign" && a.dataset.page === "campaigns")) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    const main = document.getElementById("main");
    replace(main, current.view);
    tick();
  }
  async function tick() {
    clearTimeout(timer);
    const me = current;
    if (me && me.refresh && !document.hidden && !busy) {
      busy = true;
      try { await me.refresh(); } catch (e) { live("not updated: " + e.message); } finally { busy = false; }
    }
    timer = setTimeout(tick, POLL_MS);
  }

  async function start() {
    const { json } = await api("GET", "/ui/api/session");
    csrf = json.csrf;
    replace(document.getElementById("who"), json.user);
    document.getElementById("logout").addEventListener("click", async () => {
      await api("POST", "/ui/logout");
      location.href = "/ui/login";
    });
    window.addEventListener("hashchange", route);
    document.addEventListener("visibilitychange", () => { if (!document.hidden) tick(); });
    route();
  }
  start();
})();
"""#
}
