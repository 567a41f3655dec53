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
  const timeline = makeTimeline(meta.session || "", { agents: payload.agents || {} });
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
    if (body.error) {
      const error = new Error(method + ": " + body.error.message + " (" + body.error.code + ")");
      error.data = body.error.data || {};
      throw error;
    }
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

  // A pane that says why a session cannot be shown (never an empty one).
  const paneError = (session, text) => {
    if (stream) stream.close();
    stream = null;
    current = null;
    pending.clear();
    renderApprovals();
    $("timeline").replaceChildren();
    $("streaming").textContent = "";
    const head = $("summary");
    head.replaceChildren();
    const title = el("h2", null, "Session ");
    title.appendChild(el("code", null, session));
    head.appendChild(title);
    head.appendChild(el("p", "pane-error", text));
    showError(text);
    updatePrompt();
  };

  const open = async (session) => {
    if (!SESSION_ID.test(session)) {
      paneError(session, "cannot open session " + JSON.stringify(session) + ": not a valid session id (1-64 letters, digits, '.', '_' or '-')");
      return;
    }
    try {
      // Asked first: a session that does not exist (or is not this token's to see) is said so, not shown empty.
      await rpc("session/read", { session, limit: 1 });
    } catch (err) {
      paneError(session, "cannot open session " + session + ": " + String(err.message || err));
      return;
    }
    if (stream) stream.close();
    pending.clear();
    renderApprovals();
    current = makeTimeline(session, {
      live: true,
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
      // A sub-agent's record belongs to the child's journal, not this session's: it goes to the
      // child's timeline, nested under the agent call that started it.
      if (note.method === "agent/record") {
        if (typeof p.agent === "string" && p.record) timeline.addAgent(p.agent, p.record);
      } else if (p.record) timeline.add(p.record);
      else if (note.method === "item/delta" && p.kind === "text") $("streaming").textContent += p.text;
      else if (note.method === "session/status") {
        // "finished" says less than the outcome its record already showed (verified, unverified).
        if (p.status !== "finished") timeline.setStatus(p.status);
        timeline.hooks.changed(timeline);
        if (p.error) showError("session " + session + ": " + p.error);
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
    updatePrompt();
  };

  // The prompt box: the next turn of the open session, or a new session in a served workspace.
  const updatePrompt = () => {
    $("prompt").hidden = false;
    $("prompt-send").disabled = !current;
    $("prompt-send").textContent = current ? "Send as the next turn of " + current.session : "Send as the next turn";
    $("prompt-new").disabled = $("prompt-workspace").options.length === 0;
  };
  const busy = (on) => {
    for (const b of $("prompt").querySelectorAll("button")) b.disabled = on;
    if (!on) updatePrompt();
  };
  const nextTurn = async (session, input) => {
    try {
      await rpc("turn/start", { session, input });
    } catch (err) {
      // Recorded but not open on this server (a run, a chat, an earlier server): open it with this input as its next turn.
      if (!err.data || err.data.code !== "SESSION_NOT_OPEN") throw err;
      await rpc("session/start", { workspace: err.data.workspace, session, goal: input });
    }
  };
  $("prompt").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = $("prompt-text").value;
    if (!current || input.trim() === "") return;
    busy(true);
    try {
      await nextTurn(current.session, input);
      $("prompt-text").value = "";
      showError("");
      refresh();
    } catch (err) {
      showError(String(err.message || err));
    } finally {
      busy(false);
    }
  });
  $("prompt-new").addEventListener("click", async () => {
    const input = $("prompt-text").value;
    const workspace = $("prompt-workspace").value;
    if (input.trim() === "" || !workspace) return;
    busy(true);
    try {
      const started = await rpc("session/start", { workspace, goal: input });
      $("prompt-text").value = "";
      showError("");
      await open(started.session);
      refresh();
    } catch (err) {
      showError(String(err.message || err));
    } finally {
      busy(false);
    }
  });

  const refresh = async () => {
    try {
      const listed = await rpc("session/list", {});
      const sessions = listed.sessions;
      const list = $("session-list");
      list.replaceChildren();
      const workspaces = new Set(listed.workspaces || []);
      for (const s of sessions) {
        workspaces.add(s.workspace);
        const li = el("li", s.session === (current && current.session) ? "current" : null);
        li.dataset.session = s.session;
        const button = el("button", "session-link");
        button.type = "button";
        button.appendChild(el("code", null, s.session));
        // A finished turn's outcome (verified, unverified) says more than "finished".
        const shown = s.status === "finished" && s.outcome ? s.outcome : s.status;
        button.appendChild(el("span", "session-status " + String(shown).replace(/[^a-z_]/g, "_"), shown));
        if (s.running_elsewhere) button.appendChild(el("span", "elsewhere", "running in another process"));
        if (s.goal) button.appendChild(el("span", "goal", s.goal));
        button.addEventListener("click", () => void open(s.session));
        li.appendChild(button);
        list.appendChild(li);
      }
      if (sessions.length === 0) list.appendChild(el("li", "dim", "no sessions yet"));
      const select = $("prompt-workspace");
      const chosen = select.value;
      select.replaceChildren();
      for (const w of [...workspaces].filter((w) => w !== "")) {
        const option = el("option", null, w);
        option.value = w;
        select.appendChild(option);
      }
      if (chosen) select.value = chosen;
      updatePrompt();
    } catch (err) {
      showError(String(err.message || err));
    }
  };

  $("sessions").hidden = false;
  $("mode").textContent = "live";
  $("refresh").addEventListener("click", refresh);
  refresh();
  setInterval(refresh, 5000);
  updatePrompt();
  const chosen = params.get("session");
  if (chosen !== null) open(chosen);
}

// The journal's rule for a session id (src/journal/session-path.ts): anything else is refused before any request.
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const embedded = $("harness-data");
if (embedded) startStatic(embedded);
else startLive();
`;
