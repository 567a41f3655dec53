// The propose-mode overlay is a third WorkspaceFs: a call in propose mode reads, lists and writes
// through it, so it passes the same contract as the disk and memory workspaces. What it "holds" is
// the workspace as the call sees it: the real files with the proposals laid over them. The real
// files never change; that is asserted after every test.
import { afterEach, expect } from "vitest";
import { ProposalOverlay } from "../../src/proposals/overlay.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { runWorkspaceFsContract } from "./contract.js";
import type { FsFactory } from "./fixtures.js";

let untouched: (() => void) | undefined;
afterEach(() => {
  untouched?.();
  untouched = undefined;
});

const overlayFactory: FsFactory = async (files = {}) => {
  const base = new MemoryWorkspaceFs(files);
  const before = base.snapshot();
  untouched = () => expect(base.snapshot()).toEqual(before);
  const view = new ProposalOverlay(base).begin("call-1").fs;
  return {
    kind: "memory",
    fs: view,
    // Every path the call can see (the real files, `.harness` included, and the proposed ones),
    // with the bytes the call would read.
    files: async () => {
      const result: Record<string, Uint8Array> = {};
      const real = base.snapshot();
      for (const path of new Set([...Object.keys(real), ...(await view.glob("**"))])) {
        result[path] = path.startsWith(".harness/") ? real[path]! : await view.readFile(path);
      }
      return result;
    },
    setMode: async (relative, mode) => base.setMode(relative, mode),
    dispose: async () => undefined,
  };
};

runWorkspaceFsContract("ProposalOverlay", overlayFactory);
