import { PassThrough } from "node:stream";
import { LineUi } from "../../src/ui/line-ui.js";
import { PLAIN, uiContract } from "./contract.js";

uiContract("line mode", () => {
  const input = new PassThrough();
  const output = new PassThrough();
  let written = "";
  output.setEncoding("utf8").on("data", (chunk: string) => {
    written += chunk;
  });
  return {
    ui: new LineUi(input, output, PLAIN),
    enter: (text) => input.write(`${text}\n`),
    answer: (key) => input.write(`${key}\n`),
    leave: () => input.end(),
    screen: async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      return written;
    },
    raw: () => written,
  };
});
