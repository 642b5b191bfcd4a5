/** The file audit of the fuzz tests: what hooks left under ~/.openviking is private and parses. */

import { QueueEntrySchema, SharedEntrySchema } from "../../openviking/queue.ts";
import { SessionStateSchema } from "../../memory/state.ts";
import { leakedSecrets } from "./arbitraries.ts";

/**
 * Problems with the files under `dir`: modes other than 0700/0600, state or queue files that do not parse,
 * and any file holding a credential the fuzzers drew (arbitraries.ts).
 */
export async function auditPrivateFiles(dir: string): Promise<string[]> {
  const problems: string[] = [];
  const walk = async (d: string): Promise<void> => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(d));
    } catch {
      return;
    }
    for (const e of entries) {
      const path = `${d}/${e.name}`;
      const info = await Deno.lstat(path);
      const mode = (info.mode ?? 0) & 0o777;
      const want = info.isDirectory ? 0o700 : 0o600;
      if (mode !== want) problems.push(`${path}: mode ${mode.toString(8)}`);
      if (info.isDirectory) {
        await walk(path);
        continue;
      }
      const text = await Deno.readTextFile(path).catch(() => "");
      for (const s of leakedSecrets(text)) problems.push(`${path}: holds the credential ${s}`);
      if (!e.name.endsWith(".json") && !e.name.endsWith(".claim")) continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (error) {
        problems.push(`${path}: ${(error as Error).message}`);
        continue;
      }
      const schema = d.endsWith("/pending")
        ? SharedEntrySchema
        : d.includes("/pending/kimicode/")
        ? QueueEntrySchema
        : d.includes("/hook-state/")
        ? SessionStateSchema
        : undefined;
      if (schema && !schema.safeParse(value).success) problems.push(`${path}: does not match its schema`);
    }
  };
  await walk(dir);
  return problems;
}
