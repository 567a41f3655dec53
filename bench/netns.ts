import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { BwrapSandbox } from "../src/sandbox/bwrap.js";
import { Executor } from "../src/sandbox/executor.js";
import { SessionNetwork } from "../src/sandbox/session-network.js";
import { type BenchRow, median, round } from "./stats.js";

const RUNS = 30;

/**
 * What one network namespace per session costs a call (issue 34): a sandboxed `true` joining the
 * session's namespace (nsenter in front of bwrap, no --unshare-net) vs one that gets a fresh
 * namespace (bwrap --unshare-net), runs interleaved; and making the session's namespace once.
 */
export async function benchNetns(): Promise<BenchRow[]> {
  const workspace = mkdtempSync(path.join(tmpdir(), "bench-netns-"));
  const environment = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C" };
  const fresh = new Executor({ environment });
  const network = new SessionNetwork();
  const joined = new Executor({ environment, sessionNetwork: network });
  const call = (executor: Executor) =>
    executor.execute({
      purpose: "shell",
      argv: ["/bin/true"],
      workspace,
      profile: { sandbox: new BwrapSandbox("workspace-write"), env: {} },
      timeoutMs: 60_000,
    });
  const timed = async (run: () => Promise<{ exitCode: number | null }>) => {
    const began = performance.now();
    const result = await run();
    if (result.exitCode !== 0) throw new Error(`a bench call exited ${result.exitCode}`);
    return performance.now() - began;
  };
  try {
    // Warm up: the sandbox probe, module loading. The first joining call makes the namespace.
    await timed(() => call(fresh));
    const create = performance.now();
    await network.enter("/usr/bin/bwrap");
    const created = performance.now() - create;
    const times = { fresh: [] as number[], joined: [] as number[] };
    for (let run = 0; run < RUNS; run++) {
      times.fresh.push(await timed(() => call(fresh)));
      times.joined.push(await timed(() => call(joined)));
    }
    const m = (values: number[]) => round(median(values));
    const note = `median of ${RUNS}, sandboxed /bin/true, interleaved`;
    return [
      { name: "netns.call.fresh_namespace", value: m(times.fresh), unit: "ms", note },
      {
        name: "netns.call.session_namespace",
        value: m(times.joined),
        unit: "ms",
        note: `${note}, nsenter + bwrap`,
      },
      {
        name: "netns.ratio.session_vs_fresh",
        value: round(median(times.joined) / median(times.fresh)),
        unit: "x",
      },
      { name: "netns.create.session_namespace", value: round(created), unit: "ms", note: "once per session" },
    ];
  } finally {
    await joined.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}
