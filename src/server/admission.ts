import { realpath } from "node:fs/promises";
import { extname, isAbsolute, relative, resolve, sep } from "node:path";
import { ErrorCode, RpcError } from "../api/errors.js";
import type { RunOptions } from "../api/methods.js";
import type { Identity } from "./identities.js";

/*
 * What an identity may ask the host for, checked before anything is opened or created.
 *
 * A session's model and tools run inside the sandbox and the permission policy; but some
 * session/start options are used by the host itself, outside every guard: acceptance commands
 * run unsandboxed, a scripted-model file is read from anywhere, a provider base_url receives the
 * provider's API key and is fetched by the host. And the workspace chosen is where the session's
 * writes land (a home directory holds ~/.bashrc). So:
 *  - `host: true` (the local user on stdio, and the `default` identity of HARNESS_SERVER_TOKEN
 *    unless its config says otherwise): may set all of it;
 *  - any other identity: no options.accept, no options.base_url, and a workspace (and a script)
 *    only at or under one of its configured `workspaces` roots (none configured: none allowed);
 *    its script is JSON data, never a module the server imports.
 * `workspaces`, when configured, limits host identities too. What was checked is what is used:
 * admission returns the real paths it checked, and the session is opened at those (a link the
 * client named can be flipped after the check and changes nothing).
 */

/** Whether the identity may have the host run or fetch what it names (acceptance commands, base_url). */
export function mayUseHost(identity: Identity): boolean {
  return identity.policy.host === true;
}

/** What admission resolved: the real paths every later step uses, never the names the client gave. */
export interface Admitted {
  /** The workspace's real path (as given when it does not resolve: opening it then reports that). */
  workspace: string;
  /** The script's real path, when one was named. */
  script?: string;
  /** Whether the script may be code (a module the server imports): host identities only. */
  scriptIsCode: boolean;
}

/** File names a script that is code has; an identity without host rights may not name one. */
const CODE_EXTENSIONS = [".mjs", ".js", ".cjs", ".ts", ".mts", ".cts"];

/**
 * Refuse a session/start the identity may not make (-32004), before the workspace is touched;
 * return the real paths that were checked, which are what the session then uses.
 */
export async function admitStart(
  identity: Identity,
  params: { workspace: string; options?: RunOptions | undefined },
): Promise<Admitted> {
  const workspace = await admitWorkspace(identity, params.workspace);
  const options = params.options ?? {};
  if (mayUseHost(identity)) {
    if (options.script === undefined) return { workspace, scriptIsCode: true };
    const script = await realpath(resolve(options.script)).catch(() => resolve(options.script ?? ""));
    return { workspace, script, scriptIsCode: true };
  }
  if (options.accept !== undefined && options.accept.length > 0)
    throw forbidden(
      identity,
      "options.accept: acceptance commands run on the host outside the sandbox",
      "host",
    );
  if (options.base_url !== undefined)
    throw forbidden(identity, "options.base_url: the host would send the provider's key there", "host");
  if (options.api_key_env !== undefined)
    throw forbidden(
      identity,
      "options.api_key_env: the host would read that variable and send its value to the provider",
      "host",
    );
  if (options.sandbox === "off")
    throw forbidden(identity, 'options.sandbox "off": the session\'s commands would run on the host', "host");
  if (options.script === undefined) return { workspace, scriptIsCode: false };
  const script = await admitPath(identity, options.script, "options.script");
  // The name is a first refusal with a clear reason; what decides is that such a script is only
  // ever parsed as JSON (whatever it is called, wherever a link leads).
  const named = [options.script, script].find((name) =>
    CODE_EXTENSIONS.includes(extname(name).toLowerCase()),
  );
  if (named !== undefined)
    throw forbidden(
      identity,
      "options.script: a JavaScript script is code the server would run; this identity's scripts are JSON data",
      "host",
    );
  return { workspace, script, scriptIsCode: false };
}

/**
 * Refuse a workspace outside the identity's roots (session/start, session/list); its real path
 * otherwise (the given path, resolved, when it does not exist and the identity has no roots to
 * check it against).
 */
export async function admitWorkspace(identity: Identity, workspace: string): Promise<string> {
  if (identity.policy.workspaces === undefined && mayUseHost(identity))
    return realpath(resolve(workspace)).catch(() => resolve(workspace));
  return admitPath(identity, workspace, "workspace");
}

/** Whether `path`, a real path, is still at or under one of the identity's roots. */
export async function withinRoots(identity: Identity, path: string): Promise<boolean> {
  if (identity.policy.workspaces === undefined && mayUseHost(identity)) return true;
  for (const root of identity.policy.workspaces ?? []) {
    const realRoot = await realpath(root).catch(() => undefined);
    if (realRoot !== undefined && isAtOrUnder(realRoot, path)) return true;
  }
  return false;
}

function isAtOrUnder(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

async function admitPath(identity: Identity, path: string, what: string): Promise<string> {
  const roots = identity.policy.workspaces ?? [];
  if (roots.length === 0)
    throw forbidden(identity, `${what}: this identity has no workspace roots`, "workspaces");
  if (!isAbsolute(path)) throw new RpcError(ErrorCode.InvalidParams, `${what} must be an absolute path`);
  // Symlinks resolved on both sides: a link inside a root that points out of it does not count.
  const real = await realpath(path).catch(() => undefined);
  if (real === undefined) throw new RpcError(ErrorCode.InvalidParams, `${what} ${path} does not exist`);
  if (await withinRoots(identity, real)) return real;
  throw forbidden(identity, `${what} ${path} is outside this identity's workspace roots`, "workspaces");
}

export function forbidden(identity: Identity, what: string, setting: "host" | "workspaces"): RpcError {
  const fix =
    setting === "host"
      ? `only an identity with "host": true may set it`
      : `the user config's server.identities.${identity.name}.workspaces lists the directories it may use`;
  return new RpcError(ErrorCode.Forbidden, `forbidden for identity ${identity.name}: ${what} (${fix})`, {
    code: "IDENTITY_FORBIDDEN",
  });
}
