import { PiTui } from "../../src/ui/pi-tui.js";
import { PLAIN, uiContract } from "./contract.js";
import { VirtualTerminal } from "./virtual-terminal.js";

uiContract("pi-tui", () => {
  const terminal = new VirtualTerminal();
  let written = "";
  const write = terminal.write.bind(terminal);
  terminal.write = (data: string) => {
    written += data;
    write(data);
  };
  return {
    ui: new PiTui(PLAIN, { terminal, answerGuardMs: 0 }),
    enter: (text) => {
      for (const char of text) terminal.send(char);
      terminal.send("\r");
    },
    answer: (key) => terminal.send(key === "" ? "\r" : key),
    choose: (index) => {
      for (let i = 0; i < index; i++) terminal.send("\x1b[B");
      terminal.send("\r");
    },
    dismiss: () => terminal.send("\x1b"),
    leave: () => terminal.send("\x04"),
    screen: () => terminal.screen(),
    raw: () => written,
  };
});
