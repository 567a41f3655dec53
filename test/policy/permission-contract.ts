import { describe, expect, it } from "vitest";
import { deepFreeze } from "../../src/policy/approver.js";
import type {
  PermissionDecision,
  PermissionPort,
  PermissionRequest,
  PermissionVerdict,
} from "../../src/runtime/ports.js";
import type { JsonObject } from "../../src/shared/json.js";
import type { EffectClass } from "../../src/tools/tool.js";

/** A request and the verdict the port, as its factory built it, gives it. */
export interface Example {
  request: PermissionRequest;
  verdict: PermissionVerdict;
}

export interface PermissionsUnderTest {
  port: PermissionPort;
  /** Requests the port decides each way it can: at least one allowed and one denied. */
  examples: readonly Example[];
  /**
   * Requests two or more of the port's rules or layers decide differently (an allow and a deny,
   * an allow and an ask), each with the strictest of those verdicts.
   */
  conflicts: readonly Example[];
}

/** Builds the port afresh, the same way each time. */
export type PermissionsFactory = () => Promise<PermissionsUnderTest>;

/** A request as the runtime hands it over: deep-frozen, so a port that changes it throws. */
export function permissionRequest(tool: string, effect: EffectClass, args: JsonObject): PermissionRequest {
  return deepFreeze({ tool, effect, arguments: args });
}

/** From the most permissive to the strictest: where verdicts meet, the higher one stands. */
const RANK: Record<PermissionVerdict, number> = { allow: 0, ask: 1, propose: 2, deny: 3 };
const VERDICTS = Object.keys(RANK);

/** What reaches outside the workspace or cannot be undone: never allowed for a tool no rule names. */
const OUTWARD: readonly EffectClass[] = ["destructive", "external_side_effect", "network_write"];

/** Every string the request's arguments hold, at any depth. */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (typeof value === "object" && value !== null) return Object.values(value).flatMap(strings);
  return [];
}

/**
 * The shape every decision has: a verdict, where it came from and why, the deciding rule when
 * one decided. What it names as its subject is something the request itself names (never wider);
 * a grant pattern is offered only to a person who is asked; a command line is never decided more
 * permissively than its strictest part.
 */
export function expectWellFormed(decision: PermissionDecision, request: PermissionRequest): void {
  expect(VERDICTS).toContain(decision.decision);
  expect(typeof decision.source).toBe("string");
  expect(decision.source).not.toBe("");
  expect(typeof decision.reason).toBe("string");
  expect(decision.reason).not.toBe("");
  if (decision.rule !== undefined) expect(decision.rule).not.toBe("");
  if (decision.subject !== undefined && decision.subject.value !== "" && decision.subject.value !== ".") {
    const named = strings(request.arguments).map((text) => text.trim());
    expect(named).toContain(decision.subject.value);
  }
  if (decision.pattern !== undefined) expect(decision.decision).toBe("ask");
  for (const part of decision.parts ?? []) {
    expect(VERDICTS).toContain(part.decision);
    expect(RANK[decision.decision]).toBeGreaterThanOrEqual(RANK[part.decision]);
  }
}

async function decided(port: PermissionPort, request: PermissionRequest): Promise<PermissionDecision> {
  const decision = await port.decide(request);
  expectWellFormed(decision, request);
  return decision;
}

/** The contract of the permission seam (PermissionPort), which every policy passes. */
export function permissionContract(name: string, factory: PermissionsFactory): void {
  describe(`PermissionPort contract: ${name}`, () => {
    it("decides each example as it was set up to, each decision naming where it came from", async () => {
      const { port, examples } = await factory();
      const verdicts = new Set(examples.map((example) => example.verdict));
      expect(verdicts).toContain("allow");
      expect(verdicts).toContain("deny");
      for (const { request, verdict } of examples) {
        expect({ request, verdict: (await decided(port, request)).decision }).toEqual({ request, verdict });
      }
    });

    it("lets the strictest verdict stand where its rules or layers disagree (deny > ask > allow)", async () => {
      const { port, conflicts } = await factory();
      expect(conflicts.length).toBeGreaterThan(0);
      for (const { request, verdict } of conflicts) {
        expect({ request, verdict: (await decided(port, request)).decision }).toEqual({ request, verdict });
      }
    });

    it("a deny names the rule that made it", async () => {
      const { port, examples, conflicts } = await factory();
      for (const { request, verdict } of [...examples, ...conflicts]) {
        if (verdict !== "deny") continue;
        const decision = await decided(port, request);
        expect({ request, rule: typeof decision.rule }).toEqual({ request, rule: "string" });
      }
    });

    it("decides the same request the same way every time, at once or in turn, on a fresh port too", async () => {
      const first = await factory();
      const again = await factory();
      for (const { request } of [...first.examples, ...first.conflicts]) {
        const once = await decided(first.port, request);
        const [twice, concurrently] = await Promise.all([
          first.port.decide(request),
          first.port.decide(request),
        ]);
        expect(twice).toEqual(once);
        expect(concurrently).toEqual(once);
        expect(await again.port.decide(request)).toEqual(once);
      }
    });

    it("only reads the request: a frozen request is decided and left as it was", async () => {
      const { port, examples } = await factory();
      for (const { request } of examples) {
        const before = structuredClone(request);
        await decided(port, request);
        expect(request).toEqual(before);
      }
    });

    it("never allows a tool it knows nothing of whose effect reaches outside or destroys", async () => {
      const { port } = await factory();
      for (const effect of OUTWARD) {
        const request = permissionRequest("frobnicate", effect, { target: "anything" });
        const decision = await decided(port, request);
        expect({ effect, allowed: decision.decision === "allow" }).toEqual({ effect, allowed: false });
      }
    });
  });
}
