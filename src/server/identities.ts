import { createHash, timingSafeEqual } from "node:crypto";

/** What an identity may do, from the server config's `server.identities.NAME` (all optional). */
export interface IdentityPolicy {
  /** The largest tool catalog its sessions get (as --tools); tools outside it are not offered at all. */
  tools?: string | undefined;
  /** Permission rules added to its sessions' policy (the config's rule grammar). */
  deny?: string[] | undefined;
  ask?: string[] | undefined;
  /** Sees (and may act on) every identity's sessions. */
  see_all?: boolean | undefined;
  /** May set what the host itself runs or fetches: options.accept, options.base_url (server/admission.ts). */
  host?: boolean | undefined;
  /** Absolute directories its workspaces (and scripts) must be at or under. */
  workspaces?: string[] | undefined;
}

/** Who is calling: stdio is the local user; HTTP callers are named by their bearer token. */
export interface Identity {
  name: string;
  policy: IdentityPolicy;
}

/** The local user on stdio: sees every session. */
export const LOCAL_IDENTITY: Identity = { name: "local", policy: { see_all: true, host: true } };

/**
 * Names a --tokens file may not give: "local" owns every session recorded outside the server,
 * "default" is HARNESS_SERVER_TOKEN's (the user's own token, trusted with the host by default).
 */
export const RESERVED_IDENTITIES: readonly string[] = ["local", "default"];

/** The policy of an identity named by a token: its config entry; `default` may use the host unless told otherwise. */
export function policyFor(name: string, configured: IdentityPolicy | undefined): IdentityPolicy {
  return name === "default" ? { host: true, ...configured } : (configured ?? {});
}

/**
 * Whether this identity may see a session owned by `owner`. Sessions recorded outside the server
 * (`run`, `chat`, workers) are the local user's: an identity trusted with the host is that user
 * (it could read them through an acceptance command anyway), so it sees them too.
 */
export function canSee(identity: Identity, owner: string): boolean {
  return (
    identity.policy.see_all === true ||
    identity.name === owner ||
    (owner === LOCAL_IDENTITY.name && identity.policy.host === true)
  );
}

/**
 * Bearer tokens to identity names. Tokens are compared as SHA-256 digests with
 * timingSafeEqual, every entry each time, so neither a token's content nor its length leaks.
 */
export class TokenTable {
  readonly #entries: { digest: Buffer; identity: string }[];

  constructor(tokens: Readonly<Record<string, string>>) {
    this.#entries = Object.entries(tokens).map(([token, identity]) => ({ digest: digest(token), identity }));
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The identity a presented token names, or undefined. */
  identify(token: string | undefined): string | undefined {
    const presented = digest(token ?? "");
    let found: string | undefined;
    for (const entry of this.#entries) {
      if (timingSafeEqual(entry.digest, presented) && token !== undefined && token !== "")
        found ??= entry.identity;
    }
    return found;
  }
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
