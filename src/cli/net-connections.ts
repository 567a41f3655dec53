import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { formatNetTarget } from "../rules/net-pattern.js";
import { escapeForTerminal } from "../shared/terminal-text.js";

/** What left the machine: every `net.connection` record of a session, in order. */
export function connectionsOf(records: readonly AnyRecord[]): EventData<"net.connection">[] {
  const out: EventData<"net.connection">[] = [];
  for (const record of records) if (record.type === "net.connection") out.push(record.data);
  return out;
}

/** ` (hook NAME)` for what a command hook did while running for a call; nothing for the call's own. */
export function byHook(hook: string | undefined): string {
  return hook === undefined ? "" : ` (hook ${escapeForTerminal(hook)})`;
}

/**
 * One line per call that connected (or tried): counts, bytes each way and the hosts asked for.
 * A command hook's connections count under the call it ran for, each host naming the hook.
 */
export function connectionLines(connections: readonly EventData<"net.connection">[]): string[] {
  const calls = new Map<string, EventData<"net.connection">[]>();
  for (const connection of connections) {
    const list = calls.get(connection.call_id) ?? [];
    list.push(connection);
    calls.set(connection.call_id, list);
  }
  const lines: string[] = [];
  for (const [call, list] of calls) {
    const count = (decision: string) => list.filter((c) => c.decision === decision).length;
    const up = list.reduce((sum, c) => sum + c.bytes_up, 0);
    const down = list.reduce((sum, c) => sum + c.bytes_down, 0);
    const hosts = [
      ...new Set(
        list.map(
          (c) =>
            `${escapeForTerminal(formatNetTarget(c.host, c.port))}${c.decision === "allow" ? "" : ` (${c.decision})`}${byHook(c.hook)}`,
        ),
      ),
    ];
    lines.push(
      `${escapeForTerminal(call)}: ${list.length} connection(s), ${count("allow")} allowed, ${count("deny")} denied, ${count("error")} failed; ` +
        `up ${up} B, down ${down} B; ${hosts.join(", ")}`,
    );
  }
  return lines;
}

/** The timeline line of one connection. */
export function connectionLine(data: EventData<"net.connection">): string {
  const target = escapeForTerminal(formatNetTarget(data.host, data.port));
  const rule = data.rule === undefined ? "" : ` by ${escapeForTerminal(data.rule)}`;
  const why = data.reason === undefined ? "" : `: ${escapeForTerminal(data.reason)}`;
  return `net ${data.decision} ${target} for ${escapeForTerminal(data.call_id)}${byHook(data.hook)}${rule} (up ${data.bytes_up} B, down ${data.bytes_down} B, ${data.ms} ms)${why}`;
}
