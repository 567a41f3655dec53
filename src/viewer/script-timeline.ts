/**
 * The page's timeline, as browser JavaScript: it folds journal records (exactly as journaled) into
 * DOM nodes, one record at a time, so the static report (all records at once) and the live page
 * (records as the server streams them) render through the same code.
 *
 * Every string that came from a session (goal, model text, arguments, tool output, even tool and
 * event names) reaches the DOM through textContent only: `el()` is the one way this script makes
 * nodes and it never touches innerHTML, so a record cannot inject markup or script.
 */
export const TIMELINE_JS = String.raw`
const el = (tag, cls, text) => {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
};
// A long text keeps its start and its end: a cut end is where a model would put what matters
// (an approval card for a call whose dangerous part came after a long, harmless start).
const clip = (text, max) => {
  const s = String(text);
  if (s.length <= max) return s;
  const half = Math.floor(max / 2);
  return s.slice(0, half) + "\n… (" + (s.length - 2 * half) + " characters not shown) …\n" + s.slice(s.length - half);
};
// Runs of spaces within a line as a count, so padding cannot push a command's start far from its
// end (indentation at the start of a line stays as it is).
const spaceRuns = (text) => String(text).replace(/(?<=[^\n]) {8,}/g, (run) => " [" + run.length + " spaces] ");
const OUTPUT_MAX = 8000;
const seconds = (ms) => (ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(2) + " s");

/**
 * A unified diff as harness computed it (shared/unified-diff.ts, on the host): the page never
 * diffs anything itself, it draws the text a tool result or a proposal recorded, so the page, the
 * chat and the CLI show the same bytes. kind: "applied" (a change that was written) or "proposed".
 */
function diffNode(diff, kind) {
  const pre = el("pre", "diff " + kind);
  const lines = String(diff).split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  for (const line of lines) {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "file"
      : line.startsWith("@@") ? "hunk"
      : line.startsWith("+") ? "add"
      : line.startsWith("-") ? "del" : "ctx";
    pre.appendChild(el("span", "line " + cls, line));
  }
  return pre;
}

/**
 * What a call asks for, from its arguments: the text an edit replaces and its replacement, the
 * content a write puts, a shell command line. This is a request, not a change: a change is drawn
 * only from the diff its result recorded (diffNode), so a denied edit is never drawn as applied.
 */
function callBody(name, args) {
  const box = el("div", "call-args");
  const a = args && typeof args === "object" ? args : {};
  if (name === "edit_file" && typeof a.old_text === "string" && typeof a.new_text === "string") {
    box.appendChild(el("div", "path", a.path));
    box.appendChild(el("div", "label", "replace" + (a.replace_all === true ? " every occurrence of" : "")));
    box.appendChild(el("pre", "old-text", clip(a.old_text, OUTPUT_MAX)));
    box.appendChild(el("div", "label", "with"));
    box.appendChild(el("pre", "new-text", clip(a.new_text, OUTPUT_MAX)));
  } else if (name === "write_file" && typeof a.content === "string") {
    box.appendChild(el("div", "path", a.path));
    box.appendChild(el("div", "label", "content"));
    box.appendChild(el("pre", "new-text", clip(a.content, OUTPUT_MAX)));
  } else if (name === "shell" && typeof a.command === "string") {
    box.appendChild(el("pre", "command", "$ " + spaceRuns(a.command)));
  } else {
    box.appendChild(el("pre", "json", clip(spaceRuns(JSON.stringify(a, null, 2)), OUTPUT_MAX)));
  }
  return box;
}

const EDIT_TOOLS = new Set(["edit_file", "write_file"]);

class Timeline {
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks || {};
    this.lastSeq = -1;
    this.start = null;
    this.calls = new Map();
    this.requests = new Map();
    this.approvals = new Map();
    this.approvalItems = new Map();
    this.session = null;
    this.goal = null;
    this.status = "unknown";
    this.totals = { calls: 0, edits: 0, denied: 0, approvals: 0, declined: 0, input_tokens: 0, output_tokens: 0, usage: false, first: NaN, last: NaN };
    // A report's sub-agents, by the agent call that started each: {session, label, records, agents}.
    this.agents = this.hooks.agents && typeof this.hooks.agents === "object" ? this.hooks.agents : {};
    this.agentBoxes = new Map();
    // Live (harness serve): each child's records arrive as agent/record notifications, by label;
    // the timeline of the latest agent call with that label takes them. A record that comes before
    // its agent.started is kept until that record has drawn the call's box.
    this.live = this.hooks.live === true;
    this.agentTimelines = new Map();
    this.agentWaiting = new Map();
  }

  /**
   * A sub-agent's record, live: path is its label below this session (LABEL/SUB for a
   * grandchild), so it is folded by the child's own timeline, nested in its agent call.
   */
  addAgent(path, record) {
    const parts = String(path).split("/");
    const label = parts[0];
    const rest = parts.slice(1).join("/");
    const child = this.agentTimelines.get(label);
    if (!child) {
      const waiting = this.agentWaiting.get(label) || [];
      // Bounded: a child this page never sees start must not grow the page without end.
      if (waiting.length < 1000) waiting.push([rest, record]);
      this.agentWaiting.set(label, waiting);
      return;
    }
    if (rest === "") child.add(record);
    else child.addAgent(rest, record);
  }

  /** A record already shown (a replay after a reconnect) is ignored. */
  add(record) {
    if (!record || typeof record.seq !== "number" || record.seq <= this.lastSeq) return;
    this.lastSeq = record.seq;
    const time = Date.parse(record.time);
    if (this.start === null && !Number.isNaN(time)) this.start = time;
    if (!Number.isNaN(time)) {
      if (Number.isNaN(this.totals.first)) this.totals.first = time;
      this.totals.last = time;
    }
    const data = record.data || {};
    const handler = this["on_" + String(record.type).replace(/\./g, "_")];
    if (typeof handler === "function") handler.call(this, data, record, time);
    else this.line("event", String(record.type), record, time);
    // A sub-agent's timeline (nested) leaves the page's totals to the session the page is about.
    const totals = typeof document === "undefined" || this.hooks.nested ? null : document.getElementById("totals");
    if (totals) this.renderTotals(totals);
    if (this.hooks.changed) this.hooks.changed(this);
  }

  /** The session in numbers, each from the records shown (data-total names what it counts). */
  renderTotals(box) {
    const t = this.totals;
    box.replaceChildren();
    const add = (key, value, label) => {
      const cell = el("span", "total");
      cell.dataset.total = key;
      cell.appendChild(el("span", "value", value));
      cell.appendChild(el("span", "label", label));
      box.appendChild(cell);
    };
    add("calls", t.calls, t.calls === 1 ? "call" : "calls");
    add("edits", t.edits, t.edits === 1 ? "edit" : "edits");
    add("denied", t.denied, "denied");
    add("approvals", t.approvals, (t.approvals === 1 ? "approval" : "approvals") + (t.declined ? " (" + t.declined + " declined)" : ""));
    if (t.usage) add("tokens", t.input_tokens + " in / " + t.output_tokens + " out", "tokens");
    if (!Number.isNaN(t.first)) add("duration", seconds(t.last - t.first), "duration");
  }

  /** A timeline entry, appended, or put just before the entry before (an approval before its call). */
  item(kind, title, record, time, before) {
    const li = el("li", "item " + kind);
    li.dataset.seq = String(record.seq);
    const head = el("div", "head");
    const offset = this.start === null || Number.isNaN(time) ? "" : "+" + ((time - this.start) / 1000).toFixed(3) + "s";
    head.appendChild(el("span", "offset", offset));
    head.appendChild(el("span", "title", title));
    li.appendChild(head);
    if (before && before.parentNode === this.root) this.root.insertBefore(li, before);
    else this.root.appendChild(li);
    return li;
  }

  line(kind, text, record, time) {
    return this.item("line " + kind, text, record, time);
  }

  setStatus(status) {
    this.status = status;
  }

  on_session_started(d) {
    this.goal = d.goal;
    this.setStatus("running");
    if (this.hooks.header) this.hooks.header(d);
  }
  on_session_resumed(d, r, t) { this.line("dim", "resumed", r, t); }
  on_session_forked(d, r, t) { this.line("dim", "forked from " + d.parent + " at record " + d.at_seq, r, t); }

  on_user_input(d, r, t) {
    const li = this.item("turn", "Turn " + (d.turn === undefined ? "" : d.turn), r, t);
    li.appendChild(el("pre", "input", d.text));
    this.setStatus("running");
  }
  on_user_steered(d, r, t) {
    const li = this.item("steer", "Steered", r, t);
    li.appendChild(el("pre", "input", d.text));
  }

  on_user_command(d, r, t) {
    const li = this.item("steer", "User ran " + d.call_id + (d.share ? " (shared with the model)" : " (not sent to the model)"), r, t);
    li.appendChild(el("pre", "input", d.command));
  }

  on_model_started(d, r, t) {
    const what = d.purpose === "compaction" ? "Model request (compaction)" : "Model request";
    const li = this.item("model pending", what + " · step " + (d.step + 1) + (d.attempt > 0 ? ", attempt " + (d.attempt + 1) : ""), r, t);
    this.requests.set(d.step + ":" + d.attempt, { li, time: t });
    this.openRequest = { li, time: t };
  }
  on_model_reply(d, r, t) {
    const open = this.openRequest;
    this.openRequest = null;
    const li = open ? open.li : this.item("model", "Model reply", r, t);
    li.classList.remove("pending");
    const meta = [];
    if (open && !Number.isNaN(t)) meta.push(seconds(t - open.time));
    if (d.usage) {
      this.totals.usage = true;
      this.totals.input_tokens += d.usage.input_tokens || 0;
      this.totals.output_tokens += d.usage.output_tokens || 0;
    }
    if (d.usage && d.usage.input_tokens) meta.push(d.usage.input_tokens + " in / " + (d.usage.output_tokens || 0) + " out tokens");
    if (meta.length) li.firstChild.appendChild(el("span", "meta", meta.join(" · ")));
    if (d.reasoning && d.reasoning.length) {
      const details = el("details", "reasoning");
      details.appendChild(el("summary", null, "reasoning"));
      details.appendChild(el("pre", null, d.reasoning.map((x) => x.text).join("\n")));
      li.appendChild(details);
    }
    if (d.text) li.appendChild(el("pre", "reply", d.text));
    for (const call of d.calls || []) this.callCard(call.id, call.name, call.arguments, r, t);
    if (this.hooks.replied) this.hooks.replied();
  }
  on_model_failed(d, r, t) { this.failed(d, r, t, "Model request failed"); }
  on_model_retryable_error(d, r, t) { this.failed(d, r, t, "Model request failed, retrying in " + seconds(d.retry_in_ms)); }
  on_model_protocol_error(d, r, t) { this.failed(d, r, t, "Model reply refused: " + d.error); }
  failed(d, r, t, title) {
    this.openRequest = null;
    const li = this.item("error", title, r, t);
    if (d.message) li.appendChild(el("pre", null, (d.code ? d.code + ": " : "") + d.message));
  }

  callCard(id, name, args, r, t) {
    if (this.calls.has(id)) return this.calls.get(id);
    const li = this.item("call", name, r, t);
    const badge = el("span", "status proposed", "proposed");
    li.firstChild.appendChild(badge);
    li.appendChild(callBody(name, args));
    const card = { li, badge, name, args };
    this.calls.set(id, card);
    this.totals.calls += 1;
    return card;
  }
  badge(card, status) {
    card.badge.className = "status " + String(status).replace(/[^a-z_]/g, "_");
    card.badge.textContent = status;
  }
  on_tool_started(d, r, t) {
    const card = this.callCard(d.call_id, d.name, d.arguments, r, t);
    this.badge(card, "running");
  }
  on_tool_result(d, r, t) {
    const card = this.callCard(d.call_id, d.name, {}, r, t);
    this.badge(card, d.status);
    card.li.firstChild.appendChild(el("span", "meta", seconds(d.duration_ms)));
    const out = el("div", "result");
    if (d.status === "denied") {
      // Denied: nothing was written. The card says so, and no diff is drawn for it.
      this.totals.denied += 1;
      card.li.classList.add("denied");
      out.appendChild(el("div", "denied-marker", "denied: not applied" + (d.error_type ? " (" + d.error_type + ")" : "")));
    }
    out.appendChild(el("div", "summary", (d.error_type ? d.error_type + ": " : "") + d.summary));
    const diff = d.data && typeof d.data.diff === "string" ? d.data.diff : null;
    if (d.status === "ok" && EDIT_TOOLS.has(card.name)) this.totals.edits += 1;
    if (d.status === "ok" && diff) {
      out.appendChild(el("div", "label", "applied"));
      out.appendChild(diffNode(diff, "applied"));
    }
    if (d.content) {
      if (card.name === "shell") out.appendChild(el("pre", "output", clip(d.content, OUTPUT_MAX)));
      else {
        const details = el("details", "content");
        details.appendChild(el("summary", null, "output"));
        details.appendChild(el("pre", "output", clip(d.content, OUTPUT_MAX)));
        out.appendChild(details);
      }
    }
    card.li.appendChild(out);
  }
  on_tool_retrying(d, r, t) { this.line("dim", "retrying call " + d.call_id + ": " + d.error_type, r, t); }

  // An approval is drawn just before the call it is about: it was asked and answered before the
  // call ran, whatever order the card and the question were drawn in.
  on_approval_requested(d, r, t) {
    const card = this.calls.get(d.call_id);
    if (card) this.badge(card, "awaiting approval");
    const id = (this.session || "") + ":" + r.seq;
    this.approvals.set(d.call_id, id);
    const li = this.item("line approval pending", "Approval asked for " + d.name, r, t, card ? card.li : null);
    li.dataset.approvalFor = d.call_id;
    this.approvalItems.set(d.call_id, li);
    this.setStatus("awaiting_approval");
    if (this.hooks.approvalRequested) this.hooks.approvalRequested({ id, call_id: d.call_id, tool: d.name, effect: d.effect, args: card ? card.args : {} });
  }
  on_approval_decided(d, r, t) {
    const allowed = d.decision === "allow";
    const title = "Approval " + (allowed ? "granted" : "declined") + (d.scope === "session" ? " for the session" : "") + " by " + d.by;
    const card = this.calls.get(d.call_id);
    let li = this.approvalItems.get(d.call_id);
    this.approvalItems.delete(d.call_id);
    if (li) {
      li.className = "item line approval " + (allowed ? "ok" : "error");
      li.querySelector(".title").textContent = title;
    } else {
      li = this.item("line approval " + (allowed ? "ok" : "error"), title, r, t, card ? card.li : null);
      li.dataset.approvalFor = d.call_id;
    }
    if (d.reason) li.appendChild(el("div", "summary", d.reason));
    this.totals.approvals += 1;
    if (!allowed) this.totals.declined += 1;
    if (card) this.badge(card, allowed ? "approved" : "declined");
    const id = this.approvals.get(d.call_id);
    this.approvals.delete(d.call_id);
    this.setStatus("running");
    if (id && this.hooks.approvalResolved) this.hooks.approvalResolved(id);
  }
  // What left the machine: one line per connection, under the call whose process made it.
  on_net_connection(d, r, t) {
    const target = (String(d.host).includes(":") ? "[" + d.host + "]" : d.host) + ":" + d.port;
    const kind = d.decision === "allow" ? "dim" : "error";
    this.line(kind, "net " + d.decision + " " + target + " for " + d.call_id + (d.hook ? " (hook " + d.hook + ")" : "") + (d.rule ? " by " + d.rule : "") + " (up " + d.bytes_up + " B, down " + d.bytes_down + " B)" + (d.reason ? ": " + d.reason : ""), r, t);
  }
  // A credential the proxy put into a request to its bound host: the name, never the value.
  on_credential_used(d, r, t) { this.line("dim", "credential " + d.name + " sent to " + d.host + " for " + d.call_id + (d.hook ? " (hook " + d.hook + ")" : ""), r, t); }
  on_hook_decided(d, r, t) { this.line("dim", "hook " + d.hook + " (" + d.point + "): " + d.decision, r, t); }

  on_proposal_recorded(d, r, t) {
    const li = this.item("call", "Proposed change to " + d.path, r, t);
    li.appendChild(diffNode(d.diff, "proposed"));
  }
  on_proposal_applied(d, r, t) { this.line(d.outcome === "conflict" ? "error" : "ok", "Proposal for " + d.path + ": " + d.outcome, r, t); }

  on_acceptance_checked(d, r, t) {
    const li = this.item("acceptance " + (d.accepted ? "ok" : "error"), "Acceptance " + (d.accepted ? "passed" : "failed"), r, t);
    for (const check of d.checks || []) {
      const row = el("div", "check " + (check.passed ? "ok" : "error"));
      row.appendChild(el("span", "status " + (check.passed ? "ok" : "error"), check.passed ? "pass" : "fail"));
      row.appendChild(el("code", null, check.name));
      row.appendChild(el("span", "meta", seconds(check.duration_ms) + (check.exit_code === undefined || check.exit_code === null ? "" : " · exit " + check.exit_code)));
      li.appendChild(row);
      if (check.output) li.appendChild(el("pre", "output", clip(check.output, OUTPUT_MAX)));
    }
  }

  outcome(status, text, r, t) {
    const li = this.item("outcome " + status, "Outcome: " + status, r, t);
    if (text) li.appendChild(el("pre", "reply", text));
    this.setStatus(status);
  }
  on_run_finished(d, r, t) { this.outcome(d.status, d.answer, r, t); }
  on_run_stopped(d, r, t) { this.outcome(d.status, d.reason + (d.message ? ": " + d.message : ""), r, t); }
  on_run_cancelled(d, r, t) { this.outcome("cancelled", d.reason, r, t); }
  on_turn_interrupted(d, r, t) { this.outcome("interrupted", "turn " + d.turn + ": " + d.reason, r, t); }

  on_context_compacted(d, r, t) {
    const li = this.line("dim", "Context compacted (" + d.tokens_before + " → " + d.tokens_after + " tokens)", r, t);
    const details = el("details", null);
    details.appendChild(el("summary", null, "summary"));
    details.appendChild(el("pre", null, d.summary));
    li.appendChild(details);
  }
  on_context_pruned(d, r, t) { this.line("dim", "Context pruned (" + d.tokens_before + " → " + d.tokens_after + " tokens)", r, t); }
  on_steer_delivered(d, r, t) { this.line("dim", d.count + " steer(s) sent to the model", r, t); }
  on_process_spawned() {}

  // A sub-agent is drawn inside the agent call that started it: its label, status, what it spent
  // and changed, and (in a report) its own session's timeline, nested the same way below it.
  on_agent_started(d, r, t) {
    const card = this.calls.get(d.call_id);
    const box = el("section", "agent");
    box.id = "agent-" + String(d.child_session).replace(/[^A-Za-z0-9_-]/g, "_");
    box.dataset.childSession = String(d.child_session);
    const head = el("div", "agent-head");
    head.appendChild(el("span", "agent-label", "agent " + d.label));
    const status = el("span", "status running", "running");
    head.appendChild(status);
    const budget = d.budget || {};
    head.appendChild(el("span", "meta", d.child_session + " · depth " + d.depth + " · budget " + budget.model_requests + " requests / " + budget.tool_calls + " calls"));
    box.appendChild(head);
    const facts = el("div", "agent-facts");
    box.appendChild(facts);
    const child = Object.prototype.hasOwnProperty.call(this.agents, d.call_id) ? this.agents[d.call_id] : null;
    if (child && Array.isArray(child.records)) {
      const details = el("details", "agent-records");
      details.open = true;
      details.appendChild(el("summary", null, "its session: " + child.records.length + " records"));
      const ol = el("ol", "timeline child");
      details.appendChild(ol);
      const sub = new Timeline(ol, { nested: true, agents: child.agents || {} });
      sub.session = child.session;
      for (const record of child.records) sub.add(record);
      box.appendChild(details);
    } else if (this.live) {
      const details = el("details", "agent-records");
      details.open = true;
      details.appendChild(el("summary", null, "its session, live"));
      const ol = el("ol", "timeline child");
      details.appendChild(ol);
      const sub = new Timeline(ol, { nested: true, live: true });
      sub.session = d.child_session;
      box.appendChild(details);
      this.agentTimelines.set(String(d.label), sub);
      const waiting = this.agentWaiting.get(String(d.label)) || [];
      this.agentWaiting.delete(String(d.label));
      for (const [rest, record] of waiting) this.addAgent(rest === "" ? d.label : d.label + "/" + rest, record);
    }
    if (card) card.li.appendChild(box);
    else this.item("call", "agent " + d.label, r, t).appendChild(box);
    this.agentBoxes.set(d.call_id, { box, status, facts });
  }
  on_agent_approval(d, r, t) {
    this.line(d.decision === "allow" ? "ok" : "error", "agent " + d.label + ": call " + d.call_id + (d.tool ? " (" + d.tool + ")" : "") + (d.decision === "allow" ? " approved" : " denied") + (d.by ? " by " + d.by : ""), r, t);
  }
  on_agent_merge(d, r, t) {
    this.line("dim", "merging " + (d.files || []).length + " file(s) of agent call " + d.call_id, r, t);
  }
  on_agent_finished(d, r, t) {
    let entry = this.agentBoxes.get(d.call_id);
    if (!entry) {
      this.on_agent_started({ call_id: d.call_id, label: d.child_session, child_session: d.child_session, depth: "?", budget: {} }, r, t);
      entry = this.agentBoxes.get(d.call_id);
    }
    entry.status.className = "status " + String(d.outcome).replace(/[^a-z_]/g, "_");
    entry.status.textContent = d.outcome;
    entry.box.dataset.outcome = String(d.outcome);
    const u = d.usage || {};
    const changes = d.changes || [];
    const conflicts = d.conflicts || [];
    entry.facts.replaceChildren();
    entry.facts.appendChild(el("div", "meta", u.model_requests + " model requests, " + u.tool_calls + " tool calls, " + u.input_tokens + " in / " + u.output_tokens + " out tokens · " + changes.length + " change(s), " + conflicts.length + " conflict(s)"));
    for (const change of changes) {
      entry.facts.appendChild(el("div", "path agent-change", (change.applied ? "applied " : "found ") + change.path + " +" + change.added + " -" + change.removed));
    }
    for (const conflict of conflicts) {
      entry.facts.appendChild(el("div", "path agent-conflict", "conflict " + conflict.path + ": " + conflict.reason));
    }
  }
  on_instructions_loaded(d, r, t) {
    const files = (d.files || []).map((f) => f.path).join(", ");
    this.line("dim", "Instructions loaded" + (files ? ": " + files : ""), r, t);
  }
}
`;
