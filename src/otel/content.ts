import { secretFilter, secretsOf } from "../sandbox/scrub.js";
import type { ContentScrubber } from "./spans.js";

/**
 * Prompt and result content on spans is off unless `HARNESS_OTEL_CONTENT=1`: a trace backend is
 * another place the journal's text would be kept. When on, every text goes through the secret
 * scrubbing all output gets (credential-looking variables of harness's environment, replaced).
 */
export const CONTENT_VARIABLE = "HARNESS_OTEL_CONTENT";

export function contentScrubber(environment: NodeJS.ProcessEnv): ContentScrubber | undefined {
  const on = environment[CONTENT_VARIABLE];
  if (on !== "1" && on !== "true") return undefined;
  const secrets = secretsOf(environment);
  return (text) => {
    const filter = secretFilter(secrets);
    const bytes = Buffer.concat([filter.write(Buffer.from(text, "utf8")), filter.end()]);
    return bytes.toString("utf8");
  };
}
