/**
 * `openviking-kimi turns <kimi-session-id> [--json]`: what capture would send from that session's main
 * journal — every closed turn after cleaning, filtering and redaction, one JSON object per line
 * (`{"turn_id","role","content"}`), in journal order. No network, no state change.
 */

import { loadConfig } from "../runtime/config.ts";
import { terminalJson } from "../runtime/neutralize.ts";
import { kimiHome, processEnv } from "../runtime/paths.ts";
import { locateJournal } from "./locate.ts";
import { planCapture } from "./plan.ts";
import { readJournal } from "./read.ts";
import { scanTurns, turnLineFilter } from "./turns.ts";

/** Lines `turns` prints for the journal at `path` (pure apart from reading the file). */
export async function turnsOf(
  path: string,
  options: { maxLength: number; redact: boolean },
): Promise<string[]> {
  const read = await readJournal(path, undefined, turnLineFilter);
  const { turns } = scanTurns(read.lines, 0);
  const plan = planCapture(turns, new Set(), 0, { ...options, includeOpen: false });
  return plan.toSend.map((c) =>
    terminalJson({ turn_id: c.payload.turn_id, role: c.role, content: c.payload.content })
  );
}

/** Options of `openviking-kimi turns` (parsed by cli/commands.ts). */
export interface TurnsOptions {
  kimiSessionId: string;
  json: boolean;
}

/** The `turns` command. */
export async function turnsCommand(options: TurnsOptions): Promise<number> {
  const id = options.kimiSessionId;
  const env = processEnv();
  const home = kimiHome(env);
  const found = await locateJournal(home, id);
  if (!found.ok) {
    console.error(
      `openviking-kimi: ${found.reason}. Check the id with "kimi session list --json" or set KIMI_CODE_HOME.`,
    );
    return 1;
  }
  const { config } = await loadConfig(env);
  for (
    const line of await turnsOf(found.path, { maxLength: config.captureMaxLength, redact: config.redact })
  ) console.log(line);
  return 0;
}
