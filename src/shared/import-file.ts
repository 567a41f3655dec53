import { pathToFileURL } from "node:url";

type FileImporter = (url: string) => Promise<unknown>;

// The default is a plain dynamic import. The CLI's bundle runs as a vm.Script, where import()
// is unavailable on Node 20, so the bundle's entry installs an importer from a real ES module.
let importer: FileImporter = (url) => import(url);

/** Replace how user files are imported (see src/cli/bin.ts). */
export function setFileImporter(next: FileImporter): void {
  importer = next;
}

/** Import a user-supplied JavaScript module (hook modules, scripted model replies) by path. */
export function importFile(absolutePath: string): Promise<unknown> {
  return importer(pathToFileURL(absolutePath).href);
}
