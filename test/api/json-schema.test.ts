import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  type BreakingChange,
  breakingChanges,
  protocolJsonSchema,
  protocolJsonSchemaText,
} from "../../src/api/index.js";

const committed = (name: string) => readFileSync(new URL(`../../schema/${name}`, import.meta.url), "utf8");

describe("the committed JSON Schema of the protocol", () => {
  it("is what the zod schemas generate", () => {
    const message =
      "schema/protocol.schema.json is stale: run `npm run build && npm run protocol:schema` and commit it";
    expect(committed("protocol.schema.json") === protocolJsonSchemaText(), message).toBe(true);
  });

  it("stays backward compatible with version 1 (schema/protocol.v1.json)", () => {
    const changes = breakingChanges(JSON.parse(committed("protocol.v1.json")), protocolJsonSchema());
    expect(changes, "a change breaks clients of protocol version 1").toEqual([]);
  });
});

/** The current document, changed by `edit` (a planted change). */
// biome-ignore lint/suspicious/noExplicitAny: a planted edit reaches into a JSON document freely
function planted(edit: (doc: any) => void): unknown {
  const doc = structuredClone(protocolJsonSchema());
  edit(doc);
  return doc;
}

const kinds = (changes: BreakingChange[]) => changes.map((c) => [c.kind, c.where]);

describe("breakingChanges", () => {
  const base = protocolJsonSchema();

  it("finds nothing between a document and itself", () => {
    expect(breakingChanges(base, structuredClone(base))).toEqual([]);
  });

  it("reports a removed method and a removed notification", () => {
    const next = planted((doc) => {
      delete doc.methods["turn/steer"];
      delete doc.notifications["item/delta"];
    });
    expect(kinds(breakingChanges(base, next))).toEqual([
      ["method_removed", "methods.turn/steer"],
      ["notification_removed", "notifications.item/delta"],
    ]);
  });

  it("reports a param added as required and a param that became required", () => {
    const next = planted((doc) => {
      const params = doc.methods["session/read"].params;
      params.properties.cursor = { type: "string" };
      params.required.push("cursor", "from_seq");
    });
    expect(kinds(breakingChanges(base, next))).toEqual([
      ["became_required", "methods.session/read.params.from_seq"],
      ["required_added", "methods.session/read.params.cursor"],
    ]);
  });

  it("reports a removed param, a removed result property and a notification property removed deep inside a variant", () => {
    const next = planted((doc) => {
      delete doc.methods["session/start"].params.properties.options.properties.propose;
      delete doc.methods["session/verify"].result.properties.problems;
      doc.methods["session/verify"].result.required = doc.methods["session/verify"].result.required.filter(
        (name: string) => name !== "problems",
      );
      const tool = doc.notifications["item/completed"].properties.item.oneOf.find(
        (v: { properties: { kind: { const: string } } }) => v.properties.kind.const === "tool",
      );
      delete tool.properties.summary;
    });
    expect(kinds(breakingChanges(base, next))).toEqual([
      ["property_removed", "methods.session/start.params.options.propose"],
      ["property_removed", "methods.session/verify.result.problems"],
      ["property_removed", 'notifications.item/completed.item<kind="tool">.summary'],
    ]);
  });

  it("reports a result property that became optional", () => {
    const next = planted((doc) => {
      doc.methods["turn/start"].result.required = ["session"];
    });
    expect(kinds(breakingChanges(base, next))).toEqual([
      ["became_optional", "methods.turn/start.result.turn"],
    ]);
  });

  it("reports a removed enum value, in params and in notifications", () => {
    const next = planted((doc) => {
      const decision = doc.methods["approval/respond"].params.properties.decision;
      decision.enum = decision.enum.filter((v: string) => v !== "accept_session");
      const status = doc.notifications["turn/completed"].properties.status;
      status.enum = status.enum.filter((v: string) => v !== "interrupted");
    });
    expect(kinds(breakingChanges(base, next))).toEqual([
      ["enum_value_removed", "methods.approval/respond.params.decision"],
      ["enum_value_removed", "notifications.turn/completed.status"],
    ]);
  });

  it("reports a changed type, in a param, a result and an array's items", () => {
    const next = planted((doc) => {
      doc.methods["session/read"].params.properties.from_seq = { type: "string" };
      doc.methods["session/fork"].result.properties.session = { type: "integer" };
      doc.methods["session/verify"].result.properties.problems.items = { type: "object" };
    });
    expect(kinds(breakingChanges(base, next))).toEqual([
      ["type_changed", "methods.session/read.params.from_seq"],
      ["type_changed", "methods.session/verify.result.problems[]"],
      ["type_changed", "methods.session/fork.result.session"],
    ]);
  });

  it("passes compatible changes: a new optional param, a new method, a new notification, a new result field, a wider param", () => {
    const next = planted((doc) => {
      doc.methods["session/list"].params.properties.status = { type: "string" };
      doc.methods["session/archive"] = {
        params: { type: "object", properties: { session: { type: "string" } }, required: ["session"] },
        result: { type: "object", properties: {} },
      };
      doc.notifications["session/archived"] = { type: "object", properties: {} };
      const read = doc.methods["session/read"].result;
      read.properties.truncated = { type: "boolean" };
      read.required.push("truncated");
      doc.methods["session/read"].params.properties.limit = { type: "number" };
      doc.methods["approval/respond"].params.properties.decision.enum.push("accept_always");
    });
    expect(breakingChanges(base, next)).toEqual([]);
  });

  it("reports a variant a client may send that the server no longer accepts", () => {
    const old = {
      methods: {
        "x/y": {
          params: {
            type: "object",
            properties: {
              target: {
                anyOf: [
                  { type: "object", properties: { kind: { const: "a" } } },
                  { type: "object", properties: { kind: { const: "b" } } },
                ],
              },
            },
          },
          result: {},
        },
      },
      notifications: {},
    };
    const next = structuredClone(old);
    next.methods["x/y"].params.properties.target.anyOf.pop();
    expect(kinds(breakingChanges(old, next))).toEqual([["variant_removed", "methods.x/y.params.target"]]);
  });

  it("refuses a document that is not a protocol schema", () => {
    expect(() => breakingChanges({}, base)).toThrow(/not a protocol schema/);
  });
});
