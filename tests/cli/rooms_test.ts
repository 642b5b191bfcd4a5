/**
 * The rooms' one-way rule (docs/ARCHITECTURE.md, Layout): a production module imports only modules of its own
 * room or of a room below it — lib ← openviking ← kimi ← memory ← {mcp, install} ← cli ← main.ts. The plugin's
 * texts at the root (`system-prompt.md`, `skills/`, `commands/`) are data imported as text, not a room.
 */

import { assertEquals } from "../support/assert.ts";

const ORDER: Record<string, number> = {
  lib: 0,
  openviking: 1,
  kimi: 2,
  memory: 3,
  mcp: 4,
  install: 4,
  cli: 5,
  "main.ts": 6,
};
const ROOT = new URL("../../", import.meta.url);
const IMPORT = /(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+\.ts)["']/g;

/** Every production module under `dir` (relative to the root), tests left out. */
function modules(dir: string): string[] {
  return [...Deno.readDirSync(new URL(dir, ROOT))].flatMap((e) => {
    const path = `${dir}${e.name}`;
    if (e.isDirectory) return modules(`${path}/`);
    return e.name.endsWith(".ts") && !e.name.endsWith("_test.ts") ? [path] : [];
  });
}

Deno.test("rooms: every production import goes to the module's own room or a room below it", () => {
  const files = [
    "main.ts",
    ...Object.keys(ORDER).filter((r) => r !== "main.ts").flatMap((r) => modules(`${r}/`)),
  ];
  const wrong: string[] = [];
  for (const file of files) {
    const from = file.split("/")[0];
    for (const [, spec] of Deno.readTextFileSync(new URL(file, ROOT)).matchAll(IMPORT)) {
      const to = new URL(spec, new URL(file, ROOT)).pathname.slice(ROOT.pathname.length).split("/")[0];
      if (to !== from && !(ORDER[to] < ORDER[from])) wrong.push(`${file} → ${spec}`);
    }
  }
  assertEquals(wrong, []);
  assertEquals(files.length > 60, true, `the walk found the modules (${files.length})`);
});
