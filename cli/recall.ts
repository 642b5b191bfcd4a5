/**
 * `openviking-kimi recall "<text>" [--cwd DIR] [--json]`: exactly what the prompt hook would inject for that
 * text in that workspace now — the text as the hook prints it, then each memory with its score and URI — for a
 * prompt of a session that has been shown nothing yet (a session's first prompt in config mode also gets the
 * profile; later prompts leave out what the session was already shown), and why recall failed when the
 * server could not give it. Changes no state, writes no ledger.
 */

import { printable, reportJson } from "../lib/neutralize.ts";
import * as z from "zod/mini";
import { adviceFor } from "../openviking/advice.ts";
import { loadConfig } from "../openviking/config.ts";
import { type Env, processEnv } from "../lib/paths.ts";
import { workspaceDir } from "../lib/self.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { scrub } from "../lib/scrub.ts";
import { previewInjection } from "../memory/inject.ts";
import { recallQuery } from "../memory/query.ts";

/** The shape of `recall --json` (stable, documented in README "recall"). */
export const RecallOutputSchema = z.object({
  /** The query sent to OpenViking: the text bounded, cleaned and redacted. */
  query: z.string(),
  cwd: z.string(),
  /** The workspace's actor peer ("" = none) and where it came from. */
  peer: z.object({ id: z.string(), source: z.string() }),
  /** Which recall stage answered: context, recall, find, none — or skipped (recall is off, or no text). */
  path: z.string(),
  /** What the hook prints, byte for byte ("" when it would print nothing). */
  stdout: z.string(),
  /** The memories printed, in order: URI, score (when the server gave one), characters of the output. */
  memories: z.array(z.object({ uri: z.string(), score: z.optional(z.number()), chars: z.number() })),
  /**
   * Why recall could not be had — the server did not answer, refused the key… — as opposed to nothing
   * relevant: the failure's kind, HTTP status (0: no answer) and message, what it means and the fix.
   */
  failure: z.optional(z.object({
    kind: z.string(),
    status: z.number(),
    message: z.string(),
    summary: z.string(),
    fix: z.string(),
  })),
});
export type RecallOutput = z.infer<typeof RecallOutputSchema>;

/** What the prompt hook would inject for `text` in `cwd` now. */
export async function recallPreview(
  text: string,
  cwd: string,
  env: Env = processEnv(),
): Promise<RecallOutput> {
  const { config } = await loadConfig(env, cwd);
  const peer = await resolvePeer(cwd, config);
  const injection = await previewInjection(text, { cwd, env });
  const out: RecallOutput = {
    query: recallQuery(text, config.redact),
    cwd,
    peer: { id: peer.peerId, source: peer.source },
    path: injection.recall,
    stdout: injection.stdout,
    memories: injection.injected.map((m) => ({
      uri: m.uri,
      ...(m.score !== undefined ? { score: m.score } : {}),
      chars: m.chars,
    })),
  };
  if (injection.failure) {
    const f = injection.failure;
    const advice = adviceFor(f, config.baseUrl);
    out.failure = { kind: f.kind, status: f.status, message: f.error.message, ...advice };
  }
  return scrub(out, [config.apiKey]) as RecallOutput;
}

/** The text form: the hook's output as it is (and why recall failed, if it did), then one line per memory. */
export function renderRecall(r: RecallOutput): string {
  const lines = [
    r.stdout ? r.stdout.trimEnd() : "(the prompt hook would print nothing for this text)",
    ...(r.failure ? [`recall failed: ${r.failure.summary}`, `  fix: ${r.failure.fix}`] : []),
    "",
    `${r.memories.length} memor${r.memories.length === 1 ? "y" : "ies"} via ${r.path}` +
    (r.peer.id ? ` (peer ${r.peer.id}, from ${r.peer.source})` : ""),
    ...r.memories.map((m) =>
      `  ${m.score !== undefined ? m.score.toFixed(2) : "  – "}  ${m.uri}  (${m.chars} chars)`
    ),
  ];
  return lines.join("\n");
}

/** Options of `openviking-kimi recall`. */
export interface RecallOptions {
  text: string;
  cwd: string | undefined;
  json: boolean;
}

/** `openviking-kimi recall`: exit 0; 1 when recall failed (the server did not give it); 2 for no such directory. */
export async function recallCommand(options: RecallOptions): Promise<number> {
  const cwd = await workspaceDir(options.cwd);
  if (!cwd) {
    console.error(`openviking-kimi recall: --cwd ${JSON.stringify(options.cwd)} is not a directory.`);
    return 2;
  }
  const r = await recallPreview(options.text, cwd);
  console.log(options.json ? reportJson(r, 2) : printable(renderRecall(r))); // the server's URIs too
  return r.failure ? 1 : 0;
}
