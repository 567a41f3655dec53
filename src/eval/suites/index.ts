import type { EvalSuite } from "../suite.js";
import { createFaultsSuite, type FaultBaseline } from "./faults.js";
import type { DecisionMode } from "./reservations/cases.js";
import { createReservationsSuite } from "./reservations/suite.js";

export const SUITE_NAMES = ["reservations", "faults"] as const;

export interface SuiteOptions {
  decision?: DecisionMode;
  harnessVersion?: string;
  /** The well-behaved run the faults suite injects its faults into. */
  faultBaseline: FaultBaseline;
}

/** A built-in suite by name; undefined for an unknown name. */
export function builtinSuite(name: string, options: SuiteOptions): EvalSuite | undefined {
  switch (name) {
    case "reservations":
      return createReservationsSuite(options);
    case "faults":
      return createFaultsSuite(options.faultBaseline);
    default:
      return undefined;
  }
}
