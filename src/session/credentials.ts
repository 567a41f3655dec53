import type { LoadedConfig } from "../config/load.js";
import { credentialSettings } from "../config/sections.js";
import { resolveCredentials } from "../network/credentials.js";
import type { EgressCredentials } from "../network/proxy.js";

/**
 * A session's credentials (`credentials` in the user config): the values from harness's own
 * environment, a placeholder for each, and, when any is available, the session's certificate
 * authority the proxy terminates TLS with for the bound hosts. Made once per session, so every
 * call of the session sees the same placeholders and trusts the same CA.
 */

export interface SessionCredentials {
  /** What each call's proxy is given, less the per-call journaling of a use. */
  egress?: Omit<EgressCredentials, "used">;
  /** Why a credential is unavailable (the variable unset...), for the session's notices. */
  notices: string[];
}

/** The names the user config defines credentials for: withheld from every process, scrubbed from output. */
export function credentialNames(loaded: LoadedConfig): string[] {
  return Object.keys(credentialSettings(loaded));
}

/**
 * The session's credentials; `egress` only when one is available. Then a CA is made (about 100 ms)
 * with the X.509 library (about 600 KB of code), which only such a session loads.
 */
export async function sessionCredentials(
  loaded: LoadedConfig,
  environment: Readonly<Record<string, string | undefined>>,
): Promise<SessionCredentials> {
  const { credentials, notices } = resolveCredentials(credentialSettings(loaded), environment);
  if (credentials.bindings.length === 0) return { notices };
  const { SessionAuthority, sandboxBundle, upstreamTrust } = await import("../network/session-ca.js");
  const authority = SessionAuthority.create();
  return {
    egress: {
      credentials,
      authority,
      trust: upstreamTrust(environment),
      bundle: sandboxBundle(authority),
    },
    notices,
  };
}
