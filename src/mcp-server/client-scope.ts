import type { RunSummary } from "../engine/options.js";
import { ApprovalDesk } from "./approvals.js";
import type { ServedSession } from "./served-session.js";

/** Opens a new served session for a client (the CLI builds its engine with the server's setup). */
export type SessionOpener = () => Promise<ServedSession>;

/**
 * What harness keeps for one MCP client: the session its calls are journaled in, the approval
 * questions it has not answered, and the sessions it started (its served session and its
 * harness_run sessions), which are the only journals it may read as resources.
 *
 * A stdio connection is one client; so is a Streamable HTTP session (Mcp-Session-Id) of a
 * 2025-era client. Each one's session is opened at its first call, so a client that only looks
 * around leaves no journal. Requests of the stateless protocol generation carry no client
 * identity, so they share the server's default scope (opened at the first such call).
 */
export class ClientScope {
  readonly desk = new ApprovalDesk();
  private readonly ids: string[] = [];
  private opening: Promise<ServedSession> | undefined;
  private closed = false;

  private constructor(private readonly opener: SessionOpener | undefined) {}

  /** A client whose session is opened when it first needs one. */
  static lazy(opener: SessionOpener): ClientScope {
    return new ClientScope(opener);
  }

  /** The session this client's calls go into (opened on first use). */
  session(): Promise<ServedSession> {
    if (this.closed) return Promise.reject(new Error("the MCP client's session has ended"));
    if (!this.opening) {
      const opener = this.opener;
      if (!opener) return Promise.reject(new Error("no session to serve"));
      this.opening = opener().then((session) => {
        this.ids.push(session.sessionId);
        return session;
      });
    }
    return this.opening;
  }

  /** A harness_run session this client started: its journal is now one of the client's resources. */
  addStarted(sessionId: string): void {
    if (!this.ids.includes(sessionId)) this.ids.push(sessionId);
  }

  /** The sessions this client started, oldest first. */
  started(): readonly string[] {
    return this.ids;
  }

  /**
   * The client left (it ended its HTTP session, was idle too long, or the server stops): calls
   * it still waits on are cancelled (unless `cancelCalls` is false: the server stops and lets them finish) (a shell command's process tree is killed), questions it did
   * not answer are denied, and its session ends.
   */
  async close(options: { cancelCalls?: boolean } = {}): Promise<RunSummary | undefined> {
    if (this.closed) return undefined;
    this.closed = true;
    if (!this.opening) return undefined;
    const session = await this.opening.catch(() => undefined);
    if (!session) return undefined;
    if (options.cancelCalls !== false) session.cancelAll();
    return session.close();
  }
}
