/**
 * The environment a command sees. Only an allow-list of harmless variables passes; anything whose
 * name looks like a credential is dropped even when allow-listed, unless the user named it
 * explicitly in `passEnv`. The model has no say in this.
 */

/** Variables every command gets when the parent has them. */
export const DEFAULT_ENV_ALLOW: readonly string[] = [
  "PATH",
  "HOME",
  "LANG",
  "LANGUAGE",
  "TERM",
  "TZ",
  "TMPDIR",
  "USER",
  "LOGNAME",
  "SHELL",
];

/** Prefixes of allowed families (locale settings). */
const ALLOWED_PREFIXES: readonly string[] = ["LC_"];

const SECRET_SUFFIX =
  /(?:^|_)(?:KEY|KEYS|TOKEN|TOKENS|SECRET|SECRETS|PASSWORD|PASSWD|PASSPHRASE|PASS|PWD_HASH|CREDENTIAL|CREDENTIALS|CERT|PAT|AUTH|COOKIE|SESSION|DSN|SIGNATURE)$/;
const SECRET_ANYWHERE = /PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|API_?KEY|PRIVATE|ACCESS_?KEY/;

/** Whether a variable's name suggests it holds a credential (e.g. OPENAI_API_KEY, GITHUB_TOKEN). */
export function looksLikeSecret(name: string): boolean {
  const upper = name.toUpperCase();
  return SECRET_SUFFIX.test(upper) || SECRET_ANYWHERE.test(upper);
}

export interface EnvPolicy {
  /** Extra variable names to pass (credential-like names are still dropped). */
  allow?: readonly string[];
  /** Names to pass even when they look like credentials: the user's explicit decision. */
  pass?: readonly string[];
}

/** The filtered environment for a command, from `source` (normally process.env). */
export function filterEnvironment(
  source: Readonly<Record<string, string | undefined>>,
  policy: EnvPolicy = {},
): Record<string, string> {
  const explicit = new Set(policy.pass ?? []);
  const allowed = new Set([...DEFAULT_ENV_ALLOW, ...(policy.allow ?? [])]);
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (explicit.has(name)) {
      result[name] = value;
      continue;
    }
    const isAllowed = allowed.has(name) || ALLOWED_PREFIXES.some((prefix) => name.startsWith(prefix));
    if (isAllowed && !looksLikeSecret(name)) result[name] = value;
  }
  return result;
}
