import { realpath } from "node:fs/promises";
import { isAbsolute, relative, sep } from "node:path";
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
 *    only at or under one of its configured `workspaces` roots (none configured: none allowed).
 * `workspaces`, when configured, limits host identities too.
 */

/** Whether the identity may have the host run or fetch what it names (acceptance commands, base_url). */
export function mayUseHost(identity: Identity): boolean {
  return identity.policy.host === true;
}

/** Refuse a session/start the identity may not make (-32004), before the workspace is touched. */
export async function admitStart(
  identity: Identity,
  params: { workspace: string; options?: RunOptions | undefined },
): Promise<void> {
  await admitWorkspace(identity, params.workspace);
  const options = params.options ?? {};
  if (mayUseHost(identity)) return;
  if (options.accept !== undefined && options.accept.length > 0)
    throw forbidden(
      identity,
      "options.accept: acceptance commands run on the host outside the sandbox",
      "host",
    );
  if (options.base_url !== undefined)
    throw forbidden(identity, "options.base_url: the host would send the provider's key there", "host");
  if (options.script !== undefined) await admitPath(identity, options.script, "options.script");
}

/** Refuse a workspace outside the identity's roots (session/start, session/list). */
export async function admitWorkspace(identity: Identity, workspace: string): Promise<void> {
  if (identity.policy.workspaces === undefined && mayUseHost(identity)) return;
  await admitPath(identity, workspace, "workspace");
}

async function admitPath(identity: Identity, path: string, what: string): Promise<void> {
  const roots = identity.policy.workspaces ?? [];
  if (roots.length === 0)
    throw forbidden(identity, `${what}: this identity has no workspace roots`, "workspaces");
  if (!isAbsolute(path)) throw new RpcError(ErrorCode.InvalidParams, `${what} must be an absolute path`);
  // Symlinks resolved on both sides: a link inside a root that points out of it does not count.
  const real = await realpath(path).catch(() => undefined);
  if (real === undefined) throw new RpcError(ErrorCode.InvalidParams, `${what} ${path} does not exist`);
  for (const root of roots) {
    const realRoot = await realpath(root).catch(() => undefined);
    if (realRoot === undefined) continue;
    const rel = relative(realRoot, real);
    if (rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel))) return;
  }
  throw forbidden(identity, `${what} ${path} is outside this identity's workspace roots`, "workspaces");
}

function forbidden(identity: Identity, what: string, setting: "host" | "workspaces"): RpcError {
  const fix =
    setting === "host"
      ? `only an identity with "host": true may set it`
      : `the user config's server.identities.${identity.name}.workspaces lists the directories it may use`;
  return new RpcError(ErrorCode.Forbidden, `forbidden for identity ${identity.name}: ${what} (${fix})`, {
    code: "IDENTITY_FORBIDDEN",
  });
}
