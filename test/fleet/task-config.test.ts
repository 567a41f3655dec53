import { describe, expect, it } from "vitest";
import { taskConfig } from "../../src/fleet/task-config.js";
import { UsageError } from "../../src/session/usage-error.js";

describe("taskConfig (a fleet task's options as a SessionConfig)", () => {
  it("maps the run command's flag names, numbers and scope", () => {
    expect(
      taskConfig({
        script: "/tmp/s.json",
        "base-url": "http://127.0.0.1:1",
        write: "propose",
        shell: "ask",
        "read-only": true,
        allow: ["shell(make *)"],
        accept: ["make test"],
        "accept-timeout": "5000",
        "max-model-requests": "7",
        "max-tool-calls": "9",
        "context-window": "32000",
        "request-deadline": "60000",
        "read-path": ["src"],
        "edit-path": ["src/a.ts"],
      }),
    ).toEqual({
      script: "/tmp/s.json",
      baseUrl: "http://127.0.0.1:1",
      write: "propose",
      shell: "ask",
      readOnly: true,
      allow: ["shell(make *)"],
      accept: ["make test"],
      acceptTimeoutMs: 5000,
      contextWindow: 32000,
      requestDeadlineMs: 60000,
      readPaths: ["src"],
      editPaths: ["src/a.ts"],
      limits: { maxModelRequests: 7, maxToolCalls: 9 },
    });
  });

  it("refuses a count that is not a positive whole number, naming the option", () => {
    expect(() => taskConfig({ "max-tool-calls": "-3" })).toThrow(UsageError);
    expect(() => taskConfig({ "request-deadline": "1e9" })).toThrow(
      /request-deadline must be a positive whole number/,
    );
  });
});
