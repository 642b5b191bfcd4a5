/** `deno task turns <kimi-session-id> [--json]`: what capture would send from that journal (a developer's tool). */

import { parseArgs } from "node:util";
import { loadConfig } from "../openviking/config.ts";
import { terminalJson } from "../lib/neutralize.ts";
import { preview, textColumns, WIDTH } from "../lib/columns.ts";
import { type Env, kimiHome, processEnv } from "../lib/paths.ts";
import { locateJournal } from "../kimi/journal/locate.ts";
import { CAPTURE_MAX_LENGTH, planCapture } from "../kimi/journal/plan.ts";
import { scanJournal } from "../kimi/journal/turns.ts";

/** One message capture would send. */
export type TurnMessage = { turn_id: string; role: "user" | "assistant"; content: string };

/** The messages capture would send from the journal at `path` (pure apart from reading the file). */
export async function messagesOf(
  path: string,
  options: { maxLength: number; redact: boolean },
): Promise<TurnMessage[]> {
  const { turns } = await scanJournal(path);
  const plan = planCapture(turns.turns, new Set(), 0, { ...options, includeOpen: false });
  return plan.toSend.map((c) => ({ turn_id: c.payload.turn_id, role: c.role, content: c.payload.content }));
}

/** The readable form of `turns`: a header, one line per message in 80 columns, and a count. */
export function renderTurns(messages: readonly TurnMessage[]): string[] {
  if (messages.length === 0) return ["Nothing to send: the journal has no closed turn with text."];
  const ids = messages.map((m) => preview(m.turn_id, 8)); // a longer turn id is cut
  const turnWidth = Math.max(4, ...ids.map(textColumns));
  const row = (turn: string, role: string, text: string) =>
    `${turn}${" ".repeat(turnWidth - textColumns(turn))}  ${role.padEnd(9)}  ${text}`.trimEnd();
  const turns = new Set(messages.map((m) => m.turn_id)).size;
  return [
    row("turn", "role", "message"),
    ...messages.map((m, i) => row(ids[i], m.role, preview(m.content, WIDTH - turnWidth - 13))),
    `${messages.length} message(s) in ${turns} turn(s) would be sent; --json prints each one in full.`,
  ];
}

/** Prints the messages of session `id` (`json`: in full); 1 when it has no journal. */
export async function turnsCommand(id: string, json: boolean, env: Env): Promise<number> {
  const found = await locateJournal(kimiHome(env), id);
  if (!found.ok) {
    console.error(
      `openviking-kimi: ${found.reason}. Check the id with "kimi session list --json" or set KIMI_CODE_HOME.`,
    );
    return 1;
  }
  const { config } = await loadConfig(env);
  const options = { maxLength: CAPTURE_MAX_LENGTH, redact: config.redact };
  const messages = await messagesOf(found.path, options);
  for (const line of json ? messages.map((m) => terminalJson(m)) : renderTurns(messages)) console.log(line);
  return 0;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    options: { json: { type: "boolean", default: false } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) {
    console.error("usage: deno task turns <kimi-session-id> [--json]");
    Deno.exit(2);
  }
  Deno.exit(await turnsCommand(positionals[0], values.json, processEnv()));
}
