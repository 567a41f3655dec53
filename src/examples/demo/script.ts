import type { ModelMessage } from "../../index.js";
import { lastReadVersion } from "../read-version.js";

export const DEMO_FILE = "hello.txt";
export const DEMO_INITIAL = "helo, harness\n";
export const DEMO_EXPECTED = "hello, harness\n";
export const DEMO_GOAL = `Fix the spelling in ${DEMO_FILE} so that it reads "hello, harness".`;

/**
 * The demo's scripted model: read the file, then edit it bound to the version it read, then
 * finish. It only proposes; whether the run is verified is the host's decision.
 */
export function demoScript(messages: readonly ModelMessage[], step: number) {
  if (step === 0) {
    return {
      text: `I will read ${DEMO_FILE} first.`,
      calls: [{ id: "read-1", name: "read_file", arguments: { path: DEMO_FILE } }],
    };
  }
  if (step === 1) {
    const version = lastReadVersion(messages);
    if (version === undefined) {
      return { text: `I could not read ${DEMO_FILE}, so I am stopping.` };
    }
    return {
      text: "The file says 'helo'; I will fix it, bound to the version I read.",
      calls: [
        {
          id: "edit-1",
          name: "edit_file",
          arguments: { path: DEMO_FILE, old_text: "helo,", new_text: "hello,", expected_version: version },
        },
      ],
    };
  }
  return {
    text: "I changed 'helo' to 'hello'. Whether the task is complete is for the host's check to decide.",
  };
}

/** The demo as one run: the faults suite injects its faults into this (see `FaultBaseline`). */
export const demoRun = {
  file: DEMO_FILE,
  initial: DEMO_INITIAL,
  expected: DEMO_EXPECTED,
  goal: DEMO_GOAL,
  script: demoScript,
};
