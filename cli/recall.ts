/** `openviking-kimi recall`: what the prompt hook would print for a text here now, each memory, or why it failed. */

import { printable, reportJson } from "../lib/neutralize.ts";
import * as z from "zod/mini";
import { adviceFor, causeOf, CauseSchema } from "../openviking/advice.ts";
import { loadConfig } from "../openviking/config.ts";
import { type Env, orNoHome, sharedStateDir } from "../lib/paths.ts";
import { isOpen, readBreaker } from "../openviking/breaker.ts";
import { pausedLine, recallQuery } from "../memory/prompt.ts";
import { MIN_QUERY_LENGTH } from "../memory/recall.ts";
import { ago, plural } from "../lib/columns.ts";
import { workspaceDir } from "../lib/self.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { scrub } from "../lib/redact.ts";
import { type Injection, injectionFor } from "../memory/recall.ts";
import { Budget, createClient } from "../openviking/client.ts";
import { ShownSchema } from "../memory/memory.ts";

const str = z.string();
/** The shape of `recall --json` (stable, README "recall" says each field). */
export const RecallOutputSchema = z.object({
  query: str,
  cwd: str,
  peer: z.object({ id: str, source: str }),
  path: str,
  stdout: str,
  memories: z.array(ShownSchema),
  failure: z.optional(z.object({ ...CauseSchema.shape, summary: str, fix: str })),
  paused: z.optional(z.object({ since: z.number(), reason: str })),
  skipped: z.optional(str),
});
type RecallOutput = z.infer<typeof RecallOutputSchema>;

/** What the prompt hook would print for `text` in `cwd` now, as a new session's first prompt; writes nothing. */
export async function recallPreview(text: string, cwd: string, env: Env): Promise<RecallOutput> {
  const { config } = await loadConfig(env, cwd);
  const peer = await resolvePeer(cwd, config);
  const query = recallQuery(text, config.redact);
  const on = config.enabled && config.autoRecall;
  // An open breaker: the hook asks nothing and says memory is paused; so does its preview.
  const b = on ? await readBreaker(orNoHome(() => sharedStateDir(env)) ?? "", config.baseUrl) : undefined;
  const paused = b && isOpen(b) ? b : undefined;
  const injection: Pick<Injection, "stdout" | "injected" | "failure"> & { recall: string } = paused
    ? { recall: "paused", stdout: pausedLine(paused, env), injected: [] }
    : !on
    ? { recall: "skipped", stdout: "", injected: [] }
    : await injectionFor(createClient(config, peer.peerId), config, {
      query,
      injected: [],
      budget: new Budget(config.promptBudgetMs),
      stateDir: "",
    });
  const out: RecallOutput = {
    query,
    cwd,
    peer: { id: peer.peerId, source: peer.source },
    path: injection.recall,
    stdout: injection.stdout,
    memories: injection.injected,
  };
  if (paused) out.paused = { since: paused.since, reason: paused.reason };
  // Skipped with recall on: the hook's rule for a query it asks nothing for (injectionFor).
  if (injection.recall === "skipped") {
    out.skipped = on
      ? `the text (${JSON.stringify(query)}) is shorter than ${MIN_QUERY_LENGTH} characters ` +
        `once cleaned: the hook asks the server nothing for it`
      : "recall is off here (OPENVIKING_MEMORY_ENABLED or OPENVIKING_AUTO_RECALL is false: in the " +
        "environment, ovcli.conf's plugin.kimicode, or this workspace's .openviking/config.json)";
  }
  const f = injection.failure;
  if (f) out.failure = { ...causeOf(f), ...adviceFor(f, config.baseUrl) };
  return scrub(out, [config.apiKey]) as RecallOutput;
}

/** The text form: the hook's output as it is (and why recall failed, if it did), then one line per memory. */
export function renderRecall(r: RecallOutput): string {
  const paused = r.paused && `memory is paused since ${ago(r.paused.since, Date.now())}: ${r.paused.reason}`;
  const lines = [
    r.stdout ? r.stdout.trimEnd() : "(the prompt hook would print nothing for this text)",
    ...(r.failure ? [`recall failed: ${r.failure.summary}`, `  fix: ${r.failure.fix}`] : []),
    ...(paused ? [`${paused}; the hook asks nothing until the server answers its probe`] : []),
    ...(r.skipped ? [`recall skipped: ${r.skipped}`] : []),
    "",
    `${plural(r.memories.length, "memory", "memories")}${
      r.skipped || r.failure || r.paused ? "" : ` via ${r.path}`
    }` +
    (r.peer.id ? ` (peer ${r.peer.id}, from ${r.peer.source})` : ""),
    ...r.memories.map((m) =>
      `  ${m.score !== undefined ? m.score.toFixed(2) : "  – "}  ${m.uri}  (${m.chars} chars)`
    ),
  ];
  return lines.join("\n");
}

/** `openviking-kimi recall`: exit 0; 1 when recall failed or memory is paused; 2 for no such directory. */
export async function recallCommand(options: { text: string; cwd?: string; json: boolean }, env: Env) {
  const cwd = await workspaceDir(options.cwd, env);
  if (!cwd) {
    console.error(`openviking-kimi recall: --cwd ${JSON.stringify(options.cwd)} is not a directory.`);
    return 2;
  }
  const r = await recallPreview(options.text, cwd, env);
  console.log(options.json ? reportJson(r, 2) : printable(renderRecall(r)));
  return r.failure || r.paused ? 1 : 0;
}
