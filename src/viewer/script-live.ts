/**
 * The page's two modes, as browser JavaScript (it runs after TIMELINE_JS, in the same script).
 *
 * Static (a report): the records embedded in `#harness-data` are folded once; the page makes no
 * request at all (its CSP says `connect-src 'none'`).
 *
 * Live (served by `harness serve --http`): the token from `?token=` is kept in this script's
 * memory and sent as a bearer header to POST /rpc (`session/list`, `session/verify`,
 * `approval/respond`); the event stream is `GET /events?session=ID&token=T` (an EventSource cannot
 * set headers), which replays the session's durable notifications and then follows it live; the
 * browser's reconnects send Last-Event-ID, and records already shown are skipped by seq.
 * Everything goes to the page's own origin (relative URLs; CSP `connect-src 'self'`).
 */
export const LIVE_JS = `
const $ = (id) => document.getElementById(id);
const showError = (text) => {
  const box = $("error");
  box.textContent = text;
  box.hidden = !text;
};

function renderHeader(session, started, verdict) {
  const head = $("summary");
  head.replaceChildren();
  const title = el("h2", null, "Session ");
  title.appendChild(el("code", null, session));
  head.appendChild(title);
  const status = el("span", "session-status", "");
  status.id = "session-status";
  head.appendChild(status);
  if (started) {
    head.appendChild(el("pre", "goal", started.goal));
    const provider = started.provider || {};
    const facts = [];
    if (provider.kind) facts.push(String(provider.kind) + (provider.model ? " " + provider.model : ""));
    if (started.tools) facts.push("tools: " + started.tools.map((x) => x.name).join(", "));
    head.appendChild(el("div", "meta", facts.join(" · ")));
  }
  const v = el("div", "verdict", "");
  v.id = "verdict";
  head.appendChild(v);
  if (verdict) showVerdict(verdict);
}

function showVerdict(verdict) {
  const v = $("verdict");
  if (!v) return;
  v.className = "verdict " + (verdict.ok ? "ok" : "error");
  v.textContent = verdict.ok
    ? "Journal verified: " + verdict.records + " records, hash chain intact" + (verdict.detail ? "; " + verdict.detail : "")
    : "Journal verification FAILED: " + (verdict.problems || []).join("; ");
}

function makeTimeline(session, extraHooks) {
  $("timeline").replaceChildren();
  $("streaming").textContent = "";
  let started = null;
  const timeline = new Timeline($("timeline"), Object.assign({
    header: (d) => {
      started = d;
      renderHeader(session, d, timeline.verdict);
    },
    changed: (t) => {
      const s = $("session-status");
      if (s) {
        s.textContent = t.status;
        s.className = "session-status " + t.status;
      }
    },
    replied: () => {
      $("streaming").textContent = "";
    },
  }, extraHooks));
  timeline.session = session;
  renderHeader(session, started, null);
  return timeline;
}

function startStatic(embedded) {
  document.body.classList.add("static");
  const payload = JSON.parse(embedded.textContent);
  const meta = payload.meta || {};
  const timeline = makeTimeline(meta.session || "", {});
  timeline.verdict = meta.verdict || null;
  for (const record of payload.records || []) timeline.add(record);
  if (timeline.verdict) showVerdict(timeline.verdict);
  if (meta.generated) $("mode").textContent = "report · generated " + meta.generated;
}

function startLive() {
  const params = new URLSearchParams(location.search);
  const token = params.get("token") || "";
  let rpcId = 0;
  let stream = null;
  let current = null;
  const rpc = async (method, rpcParams) => {
    const response = await fetch("rpc", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer " + token },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, params: rpcParams }),
    });
    const body = await response.json();
    if (body.error) throw new Error(method + ": " + body.error.message + " (" + body.error.code + ")");
    return body.result;
  };

  const pending = new Map();
  const renderApprovals = () => {
    const box = $("approvals");
    box.replaceChildren();
    box.hidden = pending.size === 0;
    if (pending.size === 0) return;
    box.appendChild(el("h3", null, "Waiting for your approval"));
    for (const a of pending.values()) {
      const card = el("div", "approval");
      card.dataset.approval = a.id;
      const head = el("div", "head");
      head.appendChild(el("span", "title", a.tool));
      head.appendChild(el("span", "meta", "effect: " + a.effect));
      card.appendChild(head);
      card.appendChild(callBody(a.tool, a.args));
      const buttons = el("div", "buttons");
      for (const [decision, label] of [["accept", "Accept"], ["accept_session", "Accept for session"], ["decline", "Decline"]]) {
        const button = el("button", decision, label);
        button.type = "button";
        button.dataset.decision = decision;
        button.addEventListener("click", async () => {
          for (const b of buttons.querySelectorAll("button")) b.disabled = true;
          try {
            await rpc("approval/respond", { approval_id: a.id, decision });
            showError("");
          } catch (err) {
            showError(String(err.message || err));
            for (const b of buttons.querySelectorAll("button")) b.disabled = false;
          }
        });
        buttons.appendChild(button);
      }
      card.appendChild(buttons);
      box.appendChild(card);
    }
  };

  const open = (session) => {
    if (stream) stream.close();
    pending.clear();
    renderApprovals();
    current = makeTimeline(session, {
      approvalRequested: (a) => {
        pending.set(a.id, a);
        renderApprovals();
      },
      approvalResolved: (id) => {
        pending.delete(id);
        renderApprovals();
      },
    });
    for (const li of document.querySelectorAll("#session-list li")) li.classList.toggle("current", li.dataset.session === session);
    const url = new URL(location.href);
    url.searchParams.set("session", session);
    history.replaceState(null, "", url.pathname + url.search);
    stream = new EventSource("events?session=" + encodeURIComponent(session) + "&token=" + encodeURIComponent(token));
    const timeline = current;
    stream.onmessage = (event) => {
      let note;
      try {
        note = JSON.parse(event.data);
      } catch {
        return;
      }
      const p = note && note.params;
      if (!p || p.session !== session) return;
      if (p.record) timeline.add(p.record);
      else if (note.method === "item/delta" && p.kind === "text") $("streaming").textContent += p.text;
      else if (note.method === "session/status") {
        timeline.setStatus(p.status);
        timeline.hooks.changed(timeline);
      }
    };
    stream.onerror = () => showError(stream.readyState === EventSource.CLOSED ? "the event stream closed" : "");
    stream.onopen = () => showError("");
    rpc("session/verify", { session })
      .then((v) => {
        timeline.verdict = { ok: v.ok, records: v.records, problems: v.problems };
        showVerdict(timeline.verdict);
      })
      .catch((err) => showError(String(err.message || err)));
  };

  const refresh = async () => {
    try {
      const { sessions } = await rpc("session/list", {});
      const list = $("session-list");
      list.replaceChildren();
      for (const s of sessions) {
        const li = el("li", s.session === (current && current.session) ? "current" : null);
        li.dataset.session = s.session;
        const button = el("button", "session-link");
        button.type = "button";
        button.appendChild(el("code", null, s.session));
        button.appendChild(el("span", "session-status " + s.status, s.status));
        if (s.goal) button.appendChild(el("span", "goal", s.goal));
        button.addEventListener("click", () => open(s.session));
        li.appendChild(button);
        list.appendChild(li);
      }
      if (sessions.length === 0) list.appendChild(el("li", "dim", "no sessions yet"));
      showError("");
    } catch (err) {
      showError(String(err.message || err));
    }
  };

  $("sessions").hidden = false;
  $("mode").textContent = "live";
  $("refresh").addEventListener("click", refresh);
  refresh();
  setInterval(refresh, 5000);
  const chosen = params.get("session");
  if (chosen) open(chosen);
}

const embedded = $("harness-data");
if (embedded) startStatic(embedded);
else startLive();
`;
