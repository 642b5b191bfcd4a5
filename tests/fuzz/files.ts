/** The file audit of the fuzz tests: what hooks left under ~/.openviking is private and parses. */

import { privateFileProblems, walk } from "../chaos/audit.ts";
import { leakedSecrets } from "./arbitraries.ts";

/**
 * Problems with the files under `dir` (~/.openviking): modes other than 0700/0600, state or queue files that
 * do not parse or match their schema (tests/chaos/audit.ts), and any file holding a credential the fuzzers
 * drew (arbitraries.ts).
 */
export async function auditPrivateFiles(dir: string): Promise<string[]> {
  const problems: string[] = [];
  for (const f of await walk(dir)) {
    problems.push(...await privateFileProblems(dir, f));
    if (f.isDir) continue;
    const text = await Deno.readTextFile(f.path).catch(() => "");
    for (const s of leakedSecrets(text)) problems.push(`${f.path}: holds the credential ${s}`);
  }
  return problems;
}
