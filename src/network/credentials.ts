import { randomBytes } from "node:crypto";

/**
 * Credentials that never enter the sandbox. The user config binds a variable of harness's own
 * environment to hosts; a sandboxed process sees only a per-session placeholder under that name,
 * and the egress proxy puts the real value into request headers to the bound hosts, nowhere
 * else. A placeholder sent anywhere else is worthless, so it is forwarded as it is.
 */

export interface CredentialBinding {
  /** The variable's name (what the sandbox sees, holding the placeholder). */
  name: string;
  /** Host names the value may be sent to: lowercased, no trailing dot, any port. */
  hosts: readonly string[];
  /** The header that carries it, lowercased. */
  header: string;
  /** The header's value, `{value}` standing for the real value. */
  format: string;
  /** The real value: host side only. */
  value: string;
  /** What the sandbox sees instead. */
  placeholder: string;
}

/** A credential as the user config defines it (config/schema.ts). */
export interface CredentialDefinition {
  hosts: readonly string[];
  header: string;
  format?: string | undefined;
}

/**
 * The shortest value harness accepts: the output scrubber leaves shorter values alone (they would
 * garble output), so a shorter secret could reach output unscrubbed.
 */
export const MIN_CREDENTIAL_LENGTH = 8;

/** A host as the proxy compares it: lowercased, no trailing dot, IPv6 without brackets. */
export function normalizeHost(host: string): string {
  const lower = host.toLowerCase().replace(/\.$/, "");
  return lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower;
}

/**
 * A placeholder: recognisable (it names the credential and harness) and random per session, so a
 * value seen in one session means nothing in another and cannot be guessed ahead.
 */
export function placeholderFor(name: string): string {
  return `harness-placeholder-${name}-${randomBytes(16).toString("hex")}`;
}

/** The session's credentials: which are available, and the substitution the proxy makes. */
export class Credentials {
  readonly bindings: readonly CredentialBinding[];

  constructor(bindings: readonly CredentialBinding[]) {
    this.bindings = bindings;
  }

  /** The credentials bound to `host` (any port). */
  boundTo(host: string): CredentialBinding[] {
    const wanted = normalizeHost(host);
    return this.bindings.filter((binding) => binding.hosts.includes(wanted));
  }

  /** What the sandbox sees under each credential's name. */
  placeholders(): Record<string, string> {
    return Object.fromEntries(this.bindings.map((binding) => [binding.name, binding.placeholder]));
  }

  /**
   * A request's headers for `host`, with the placeholders of the credentials bound to that host
   * replaced: the binding's own header (when it carries the placeholder) becomes `format` with the
   * real value; any other header carrying it gets the real value in its place. Placeholders of
   * credentials not bound to `host` are left as they are: they are worthless there. Returns the
   * names substituted, for the journal.
   */
  substitute(
    host: string,
    headers: Readonly<Record<string, string | string[] | undefined>>,
  ): { headers: Record<string, string | string[]>; used: string[] } {
    const bound = this.boundTo(host);
    const used = new Set<string>();
    const out: Record<string, string | string[]> = {};
    for (const [rawName, value] of Object.entries(headers)) {
      if (value === undefined) continue;
      const name = rawName.toLowerCase();
      const rewrite = (text: string): string => {
        let result = text;
        for (const binding of bound) {
          if (!result.includes(binding.placeholder)) continue;
          used.add(binding.name);
          result =
            name === binding.header
              ? binding.format.replace("{value}", binding.value)
              : result.split(binding.placeholder).join(binding.value);
        }
        return result;
      };
      out[rawName] = Array.isArray(value) ? value.map(rewrite) : rewrite(value);
    }
    return { headers: out, used: [...used].sort() };
  }
}

/**
 * The session's credentials from the user config's definitions and harness's own environment.
 * A variable that is unset, empty, too short or holds a line break makes that credential
 * unavailable (a notice says why; the sandbox then sees no variable of that name): never a crash.
 */
export function resolveCredentials(
  definitions: Readonly<Record<string, CredentialDefinition>>,
  environment: Readonly<Record<string, string | undefined>>,
): { credentials: Credentials; notices: string[] } {
  const bindings: CredentialBinding[] = [];
  const notices: string[] = [];
  for (const [name, definition] of Object.entries(definitions)) {
    const hosts = [...new Set(definition.hosts.map(normalizeHost))];
    const value = environment[name];
    const problem =
      value === undefined || value === ""
        ? `harness's environment has no ${name}`
        : value.length < MIN_CREDENTIAL_LENGTH
          ? `its value is shorter than ${MIN_CREDENTIAL_LENGTH} characters, too short to scrub from output`
          : /[\r\n\0]/.test(value)
            ? "its value holds a line break or NUL, which no header may carry"
            : undefined;
    if (problem !== undefined || value === undefined) {
      notices.push(
        `credential ${name} is unavailable: ${problem ?? "no value"}; commands see no ${name} and requests to ${hosts.join(", ")} carry no credential`,
      );
      continue;
    }
    bindings.push({
      name,
      hosts,
      header: definition.header.toLowerCase(),
      format: definition.format ?? "{value}",
      value,
      placeholder: placeholderFor(name),
    });
  }
  return { credentials: new Credentials(bindings), notices };
}
