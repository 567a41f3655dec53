import { parseSessionConfig, type SessionConfig } from "../session/config.js";
import { UsageError } from "../session/usage-error.js";
import type { TaskOptions } from "./task.js";

/**
 * The fleet door's parser: a task's options (the run command's flag names and values, as
 * `harness queue add` stored them) as a SessionConfig, checked like any configuration.
 */
export function taskConfig(options: TaskOptions): SessionConfig {
  const count = (flag: keyof TaskOptions & string): number | undefined => {
    const value = options[flag];
    if (value === undefined) return undefined;
    if (typeof value !== "string" || !/^[0-9]{1,15}$/.test(value) || Number(value) <= 0)
      throw new UsageError(
        `task option ${flag} must be a positive whole number, got ${JSON.stringify(value)}`,
      );
    return Number(value);
  };
  const maxModelRequests = count("max-model-requests");
  const maxToolCalls = count("max-tool-calls");
  const acceptTimeoutMs = count("accept-timeout");
  const contextWindow = count("context-window");
  const requestDeadlineMs = count("request-deadline");
  // Sub-agents, as harness run's --agents-*: a worker's children share its queue's quota.
  const agents = {
    ...optional("depth", count("agents-depth")),
    ...optional("concurrent", count("agents-concurrent")),
    ...optional("max", count("agents-max")),
  };
  return parseSessionConfig({
    ...(options.script !== undefined ? { script: options.script } : {}),
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.model !== undefined ? { model: options.model } : {}),
    ...(options["base-url"] !== undefined ? { baseUrl: options["base-url"] } : {}),
    ...(options["api-key-env"] !== undefined ? { apiKeyEnv: options["api-key-env"] } : {}),
    ...(options.profile !== undefined ? { profile: options.profile } : {}),
    ...(options.write !== undefined ? { write: options.write } : {}),
    ...(options.shell !== undefined ? { shell: options.shell } : {}),
    ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
    ...(options.tools !== undefined ? { tools: options.tools } : {}),
    ...(options["read-only"] === true ? { readOnly: true } : {}),
    ...(options.allow !== undefined ? { allow: options.allow } : {}),
    ...(options.ask !== undefined ? { ask: options.ask } : {}),
    ...(options.deny !== undefined ? { deny: options.deny } : {}),
    ...(options.accept !== undefined ? { accept: options.accept } : {}),
    ...(acceptTimeoutMs !== undefined ? { acceptTimeoutMs } : {}),
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    ...(requestDeadlineMs !== undefined ? { requestDeadlineMs } : {}),
    ...(options["read-path"] !== undefined ? { readPaths: options["read-path"] } : {}),
    ...(options["edit-path"] !== undefined ? { editPaths: options["edit-path"] } : {}),
    ...(Object.keys(agents).length > 0 ? { agents } : {}),
    limits: {
      ...(maxModelRequests !== undefined ? { maxModelRequests } : {}),
      ...(maxToolCalls !== undefined ? { maxToolCalls } : {}),
    },
  });
}

function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return value === undefined ? {} : ({ [key]: value } as { [P in K]?: number });
}
