/**
 * `openviking-kimi memories [show <uri> | forget <uri> | export <file> | import <file>] [--search TEXT]
 * [--cwd DIR] [--json]`: what recall can bring here (this project's memories and the user's), grouped by kind,
 * newest first; one in full with the commits it came from; forgetting one; the user's memories exported to
 * and imported from an OpenViking `.ovpack`. Every server text is neutralised before it is printed.
 */

import { neutralize, reportJson } from "../lib/neutralize.ts";
import { charColumns } from "../lib/columns.ts";
import { adviceFor } from "../openviking/advice.ts";
import { loadConfig } from "../openviking/config.ts";
import { clientOptions, createClient, type OvFailure } from "../openviking/client.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { dirName, type Env, joinPath, ledgerDir, orNoHome, processEnv } from "../lib/paths.ts";
import { commandName, workspaceDir } from "../lib/self.ts";
import { ago, STATUS_COLUMNS as WIDTH, wrap } from "./status.ts";
import {
  exportMemories,
  forgetMemory,
  importMemories,
  isMemoryUri,
  isNotFound,
  type Listed,
  type Listing,
  listMemories,
  memoryRoots,
  type Root,
  searchMemories,
  showMemory,
  type Shown,
} from "../memory/inspect.ts";

/** Exit codes beyond 0 (done), 1 (the server failed) and 2 (a usage error). */
export const EXIT_NO_MEMORY = 3;
export const EXIT_NO_ROUTE = 4;

/** `text` on one line cut to `cols` terminal columns (an ellipsis marks the cut). */
export function fit(text: string, cols: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  let out = "";
  let used = 0;
  for (const c of one) {
    if (used + charColumns(c) > cols - 1) return `${out}…`;
    out += c;
    used += charColumns(c);
  }
  return out;
}

/** The listing's lines: one group per kind (most recent first), each memory's age and text, then its URI. */
export function renderListing(l: Listing & { roots: Root[] }, now: number, search?: string): string[] {
  const n = l.memories.length;
  const where = l.roots.length > 1 ? "this project's and yours" : "yours (no project memories here)";
  const lines = [`${n} memor${n === 1 ? "y" : "ies"}${search ? ` found for "${search}"` : ""}: ${where}`];
  const groups = new Map<string, Listed[]>();
  for (const m of l.memories) groups.set(m.kind, [...groups.get(m.kind) ?? [], m]);
  for (const [kind, list] of groups) {
    lines.push("", `${kind} (${list.length})`);
    for (const m of list) {
      const when =
        (search && m.score !== undefined ? m.score.toFixed(2) : m.modified ? ago(m.modified, now) : "?")
          .padEnd(10);
      const tag = m.scope === "project" ? "project: " : "";
      lines.push(`  ${when}${fit(tag + m.text, WIDTH - 12)}`, ...wrap(`      ${m.uri}`, "      "));
    }
  }
  for (const f of l.failures) {
    lines.push("", ...wrap(`could not read ${f.root.uri}: ${f.failure.error.message}`, "  "));
  }
  return lines;
}

/** The lines of one memory in full and where it came from (what cannot be known is said so). */
export function renderShown(s: Shown, now: number): string[] {
  const lines = [
    ...wrap(s.uri, ""),
    s.modified ? `changed ${ago(s.modified, now)}` : "when it changed: the server did not say",
    "",
    ...s.text.split("\n").flatMap((l) => wrap(l, "")),
    "",
    "Where it came from:",
  ];
  for (const o of s.origins) {
    const who = o.kimiSession
      ? `Kimi session ${o.kimiSession}`
      : `OpenViking session ${o.session} (not ours)`;
    const archive = o.archive.slice(o.archive.lastIndexOf("/") + 1);
    lines.push(
      ...wrap(
        `- ${o.change} by commit ${archive} of ${who}${o.extractedAt ? `, ${o.extractedAt}` : ""}`,
        "  ",
      ),
      ...wrap(`  turns: ${o.turns.length ? o.turns.join(", ") : "the archive could not be read"}`, "    "),
      ...wrap(
        o.capture
          ? `  task ${o.taskId}: our ${o.capture.event} capture, ${ago(o.capture.at, now)}`
          : o.taskId
          ? `  task ${o.taskId}: our ledger has no capture of it`
          : "  its task is gone from the server (finished ones are kept 24 h): which capture made it is unknown",
        "    ",
      ),
    );
  }
  if (s.unknown) lines.push(...wrap(`- unknown: ${s.unknown}`, "  "));
  else if (!s.origins.length) {
    lines.push(...wrap(
      `- no commit among the newest ${s.diffsRead} memory diffs names it: it was written directly (an ` +
        "import, the remember tool, another client) or by an older commit",
      "  ",
    ));
  }
  return lines;
}

/** Options of `openviking-kimi memories`. */
export interface MemoriesOptions {
  action: string | undefined;
  arg: string | undefined;
  search: string | undefined;
  cwd: string | undefined;
  json: boolean;
}

const ACTIONS = ["show", "forget", "export", "import"];

/** Prints a result: `value` as JSON with --json, else `text` (on stderr when it is an `error`). */
type Say = (value: unknown, text: string[], error?: boolean) => void;

/** `openviking-kimi memories`: exit 0; 1 the server failed; 2 a usage error; 3 no such memory; 4 no such route. */
export async function memoriesCommand(o: MemoriesOptions): Promise<number> {
  const env = processEnv();
  const say: Say = (value, text, error = false) => {
    if (o.json) console.log(reportJson(value, 2));
    else (error ? console.error : console.log)(neutralize(text.join("\n")));
  };
  const usage = (message: string) => (console.error(`openviking-kimi memories: ${message}`), 2);
  if (o.action !== undefined && !ACTIONS.includes(o.action)) {
    return usage(`unknown action ${JSON.stringify(o.action)} (show, forget, export or import)`);
  }
  if (o.action && o.arg === undefined) {
    return usage(`${o.action} needs ${/port/.test(o.action) ? "<file>" : "<uri>"}`);
  }
  if (!o.action && o.arg !== undefined) return usage(`unexpected argument ${JSON.stringify(o.arg)}`);
  if (o.search !== undefined && o.action) return usage("--search lists; it goes without an action");
  const uri = o.arg ?? "";
  if ((o.action === "show" || o.action === "forget") && !isMemoryUri(uri)) {
    return usage(
      `${JSON.stringify(uri)} is not a memory's URI (viking://…/memories/….md); \`${
        commandName(env)
      } memories\` lists them`,
    );
  }
  const cwd = await workspaceDir(o.cwd);
  if (!cwd) return usage(`--cwd ${JSON.stringify(o.cwd)} is not a directory`);
  const { config } = await loadConfig(env, cwd);
  const peer = await resolvePeer(cwd, config);
  const client = createClient(clientOptions(config, peer.peerId, { timeoutMs: 10_000 }));
  const failed = (f: OvFailure, what: string) => {
    const a = adviceFor(f, config.baseUrl);
    const noRoute = f.kind === "missing-route";
    const summary = noRoute
      ? `the OpenViking server at ${config.baseUrl} has no ${what} route (OpenViking 0.5.2 has it); nothing was changed`
      : a.summary;
    say({ error: { kind: f.kind, status: f.status, message: summary, fix: a.fix } }, [
      ...wrap(`openviking-kimi memories: ${what} failed: ${summary}`, "  "),
      ...wrap(`  fix: ${a.fix}`, "    "),
    ], true);
    return noRoute ? EXIT_NO_ROUTE : 1;
  };
  const now = Date.now();
  if (o.action === "show") {
    const s = await showMemory(client, uri, orNoHome(() => ledgerDir(env)) ?? "");
    if ("ok" in s) return isNotFound(s) ? noMemory(uri, say, env) : failed(s, "reading the memory");
    say(s, renderShown(s, now));
    return 0;
  }
  if (o.action === "forget") {
    const r = await forgetMemory(client, uri);
    if (r.ok) {
      say({ uri, forgotten: true, text: r.text }, [
        `forgot ${uri}; it said:`,
        ...r.text.split("\n").flatMap((l) => wrap(`  ${l}`, "  ")),
      ]);
      return 0;
    }
    return "gone" in r ? noMemory(uri, say, env, "already gone; nothing was deleted") : failed(r, "forget");
  }
  const slow = clientOptions(config, peer.peerId, { timeoutMs: 120_000 });
  if (o.action === "export") {
    const pack = await exportMemories(slow);
    if (!(pack instanceof Uint8Array)) return failed(pack, "export");
    try {
      await Deno.writeFile(uri, pack, { createNew: true, mode: 0o600 });
    } catch (e) {
      return usage(`cannot write ${uri} (${(e as Error).message}); nothing was overwritten`);
    }
    say({ file: uri, bytes: pack.length }, [
      `exported your memories to ${uri} (${pack.length} bytes, an OpenViking .ovpack)`,
    ]);
    return 0;
  }
  if (o.action === "import") {
    const pack = await Deno.readFile(uri).catch((e: Error) => e);
    if (!(pack instanceof Uint8Array)) return usage(`cannot read ${uri}: ${pack.message}`);
    // Import replaces the whole memory root: what it replaces is exported first, and kept.
    const before = await exportMemories(slow);
    let backup: string | undefined;
    if (before instanceof Uint8Array) {
      backup = joinPath(
        dirName(uri) || ".",
        `memories-before-import-${new Date(now).toISOString().replace(/[:.]/g, "-")}.ovpack`,
      );
      try {
        await Deno.writeFile(backup, before, { createNew: true, mode: 0o600 });
      } catch (e) {
        return usage(
          `cannot keep the memories import would replace in ${backup} (${
            (e as Error).message
          }); nothing was imported`,
        );
      }
    } else if (!isNotFound(before)) return failed(before, "export (of what import would replace)");
    const done = await importMemories(createClient(slow), pack);
    if (!done.ok) return failed(done, "import");
    const kept = backup
      ? `; what it replaced is in ${backup} (\`${commandName(env)} memories import ${backup}\` puts it back)`
      : "";
    say(
      { file: uri, uri: done.result, ...(backup ? { backup } : {}) },
      wrap(`imported ${uri} into ${done.result}${kept}`, "  "),
    );
    return 0;
  }
  const roots = await memoryRoots(client, peer.peerId);
  if (!roots.ok) return failed(roots, "listing");
  const listing = o.search !== undefined
    ? await searchMemories(client, roots.result, o.search)
    : await listMemories(client, roots.result);
  const all = { roots: roots.result, ...listing };
  say({
    roots: roots.result,
    memories: listing.memories,
    failures: listing.failures.map((f) => ({ uri: f.root.uri, message: f.failure.error.message })),
  }, renderListing(all, now, o.search));
  return listing.failures.length && !listing.memories.length ? 1 : 0;
}

/** Says there is no memory at `uri` (`why`); returns its exit code. */
function noMemory(uri: string, say: Say, env: Env, why = "the server has no memory there"): number {
  say({ error: { kind: "no-memory", uri, message: why } }, [
    ...wrap(`openviking-kimi memories: ${uri}: ${why}. \`${commandName(env)} memories\` lists them.`, "  "),
  ], true);
  return EXIT_NO_MEMORY;
}
