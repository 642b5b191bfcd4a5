/** `openviking-kimi memories [show|forget <uri> | export|import <file>]`: inspect.ts's operations in words. */

import { neutralize, reportJson } from "../lib/neutralize.ts";
import { type Advice, adviceFor, isRootKeyRefusal } from "../openviking/advice.ts";
import { loadConfig } from "../openviking/config.ts";
import { createClient, isNotFound, type OvFailure } from "../openviking/client.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { dirName, isAbsolutePath, joinPath, ledgerDir, orNoHome, processEnv } from "../lib/paths.ts";
import { commandName, invocationCwd, workspaceDir } from "../lib/self.ts";
import { ago, plural, preview, WIDTH, wrapLines } from "../lib/columns.ts";
import { oneLine } from "../memory/digest.ts";
import { recallQuery } from "../memory/prompt.ts";
import * as inspect from "../memory/inspect.ts";

/** The root export and import move. */
const MEMORIES = "viking://~/memories";

/** Exit codes beyond 0 (done), 1 (the server or a file failed) and 2 (the command line is wrong). */
const [EXIT_NO_MEMORY, EXIT_NO_ROUTE] = [3, 4];

/** The listing's lines: one group per kind (most recent first), each memory's age and text, then its URI. */
export function renderListing(
  l: inspect.Listing & { roots: inspect.Root[] },
  now: number,
  search?: string,
): string[] {
  const where = l.roots.length > 1 ? "this project's and yours" : "yours (no project memories here)";
  const found = search ? ` found for "${search}"` : "";
  const lines = [`${plural(l.memories.length, "memory", "memories")}${found}: ${where}`];
  const groups = new Map<string, inspect.Listed[]>();
  for (const m of l.memories) groups.set(m.kind, [...groups.get(m.kind) ?? [], m]);
  const when = (m: inspect.Listed) =>
    search && m.score !== undefined ? m.score.toFixed(2) : m.modified ? ago(m.modified, now) : "?";
  // One column: the text starts two spaces after the widest age (or score).
  const column = Math.max(0, ...l.memories.map((m) => when(m).length)) + 2;
  for (const [kind, list] of groups) {
    lines.push("", `${kind} (${list.length})`);
    for (const m of list) {
      const text = preview((m.scope === "project" ? "project: " : "") + oneLine(m.text), WIDTH - 2 - column);
      lines.push(`  ${when(m).padEnd(column)}${text}`, `      ${m.uri}`);
    }
  }
  for (const f of l.failures) lines.push("", `could not read ${f.root.uri}: ${f.failure.error.message}`);
  return wrapLines(lines);
}

/** The lines of one memory in full and where it came from (what cannot be known is said so). */
export function renderShown(s: inspect.Shown, now: number): string[] {
  const lines = [s.uri, "", ...s.text.split("\n"), "", "Where it came from:"];
  for (const o of s.origins) {
    const who = o.kimiSession
      ? `Kimi session ${o.kimiSession}`
      : `OpenViking session ${o.session} (not ours)`;
    const [archive, many] = [o.archive.slice(o.archive.lastIndexOf("/") + 1), o.turns.length > 1];
    const run = o.capture?.event === "replay" ? "queue replay" : `${o.capture?.event} capture`;
    lines.push(
      `- ${o.change} by commit ${archive} of ${who}${o.extractedAt ? `, ${o.extractedAt}` : ""}`,
      o.turns.length
        ? `  turn id${many ? "s" : ""} ${o.turns.join(", ")} (as \`turns\` lists ${many ? "them" : "it"})`
        : "  turns: the archive could not be read",
      o.capture
        ? `  task ${o.taskId}: our ${run}, ${ago(o.capture.at, now)}`
        : o.taskId
        ? `  task ${o.taskId}: our ledger has no capture of it`
        : "  its task is gone from the server (finished ones are kept 24 h): which capture made it is unknown",
    );
  }
  if (s.unknown) lines.push(`- unknown: ${s.unknown}`);
  else if (!s.diffsRead) {
    lines.push("- no memory diff could be read from the server: which commit made it is unknown");
  } else if (!s.origins.length) {
    lines.push(
      `- no commit among the newest ${s.diffsRead} memory diffs names it: it was written directly (an ` +
        "import, the remember tool, another client) or by an older commit",
    );
  }
  return wrapLines(lines);
}

/** What failure `f` of a request about `uri` means here: advice.ts's words, no capture-queue fix (pure). */
export function memoriesAdvice(f: OvFailure, baseUrl: string, uri: string, env = processEnv()): Advice {
  const [a, again] = [adviceFor(f, baseUrl), "then run it again"];
  if (f.kind === "auth" && /Development mode/i.test(f.error.message)) {
    return {
      ...a,
      fix: 'run OpenViking with API keys (ov.conf: server.auth_mode = "api_key"): dev mode has no packs',
    };
  }
  if (f.kind === "auth" && f.status === 403 && !isRootKeyRefusal(f)) {
    return {
      summary: `the server denied access to ${uri} (HTTP 403): ${f.error.message}`,
      fix: `\`${commandName(env)} memories\` lists the memories your key may use`,
    };
  }
  const fix = f.kind === "rejected"
    ? `fix what the server says, ${again}`
    : f.kind === "too-large"
    ? "check what answers at that address (a proxy's error page?)"
    : `${a.fix.replace(/; writes wait in the queue[^;]*$/, "")}, ${again}`;
  return { ...a, fix };
}

/** Writes `bytes` to a new file `path` (0600, never over one); the error's words, if any. */
const writeNew = (path: string, bytes: Uint8Array) =>
  Deno.writeFile(path, bytes, { createNew: true, mode: 0o600 }).then(
    () => undefined,
    (e: Error) => e.message,
  );

/** File `path`'s bytes when it is a pack of the user's memories, else why not. */
async function readPack(path: string): Promise<Uint8Array | string> {
  const info = await Deno.stat(path).catch((e: Error) => e.message);
  if (typeof info === "string") return `cannot read ${path} (${info})`;
  if (!info.isFile) return `${path} is not a regular file`;
  if (info.size > inspect.MAX_PACK_BYTES) {
    return `${path} is larger than a pack is read (${inspect.MAX_PACK_BYTES} bytes)`;
  }
  const pack = await Deno.readFile(path).catch((e: Error) => e.message);
  if (typeof pack === "string") return `cannot read ${path} (${pack})`;
  return inspect.isMemoriesPack(pack)
    ? pack
    : `${path} is not a pack of your memories (every entry under memories/)`;
}

/**
 * `openviking-kimi memories`: exit 0; 1 the server failed or a file was not written; 2 a wrong command line
 * or import file; 3, 4 as above.
 */
export async function memoriesCommand(
  o: { action?: string; arg?: string; search?: string; cwd?: string; json: boolean },
  env = processEnv(),
): Promise<number> {
  const say = (value: unknown, text: string[], code = 0) => (
    o.json
      ? console.log(reportJson(value, 2))
      : (code ? console.error : console.log)(neutralize(wrapLines(text).join("\n"))), code
  );
  const stop = (code: number, message: string, fix = "", kind = "usage") =>
    say(
      { error: { kind, message, ...(fix ? { fix } : {}) } },
      [`openviking-kimi memories: ${message}`, ...(fix ? [`  fix: ${fix}`] : [])],
      code,
    );
  const { action, arg = "" } = o;
  const uri = /port$/.test(action ?? "") && !isAbsolutePath(arg) ? joinPath(invocationCwd(env), arg) : arg;
  const list = `\`${commandName(env)} memories\` lists them`;
  if (action !== undefined && !["show", "forget", "export", "import"].includes(action)) {
    return stop(2, `unknown action ${JSON.stringify(action)} (show, forget, export or import)`);
  }
  if (action && o.arg === undefined) return stop(2, `${action} needs its argument`); // the table: no arg alone
  if (o.search !== undefined && action) return stop(2, "--search lists; it goes without an action");
  const cwd = await workspaceDir(o.cwd, env);
  if (!cwd) return stop(2, `--cwd ${JSON.stringify(o.cwd)} is not a directory`);
  const { config } = await loadConfig(env, cwd);
  const peer = await resolvePeer(cwd, config);
  if ((action === "show" || action === "forget") && !inspect.isMemoryUri(uri, peer.peerId)) {
    const under = inspect.rootNames(peer.peerId).join(" or ");
    return stop(2, `${JSON.stringify(uri)} is not a memory's URI (a ….md file under ${under}); ${list}`);
  }
  const client = createClient(config, peer.peerId, { timeoutMs: 10_000 });
  const slow = createClient(config, peer.peerId, { timeoutMs: 120_000 }); // a pack's transfer
  const failed = (f: OvFailure, what: string, target: string, after = "") => {
    const a = memoriesAdvice(f, config.baseUrl, target, env);
    if (f.kind !== "missing-route") return stop(1, `${what} failed: ${a.summary}${after}`, a.fix, f.kind);
    const why = `the OpenViking server at ${config.baseUrl} has no ${what} route (OpenViking 0.5.2 has it)`;
    return stop(EXIT_NO_ROUTE, `${why}; nothing was changed`, "upgrade OpenViking to 0.5.2 or newer", f.kind);
  };
  const now = Date.now();
  if (action === "show") {
    const s = await inspect.showMemory(client, uri, orNoHome(() => ledgerDir(env)) ?? "");
    if (!("ok" in s)) return say(s, renderShown(s, now));
    if (s.kind === "too-large") {
      const fix = `\`${commandName(env)} memories forget ${uri}\` still forgets it`;
      return stop(1, `${uri} is too large to show (${s.error.message})`, fix, s.kind);
    }
    return isNotFound(s)
      ? stop(EXIT_NO_MEMORY, `${uri}: the server has no memory there; ${list}`, "", "no-memory")
      : failed(s, "read", uri);
  }
  if (action === "forget") {
    const r = await inspect.forgetMemory(client, uri);
    if (r.ok) {
      const said = r.text === undefined
        ? [`forgot ${uri} (it was too large to show)`]
        : [`forgot ${uri}`, "it said:", ...r.text.split("\n").map((l) => `  ${l}`)];
      return say({ uri, forgotten: true, ...r.text === undefined ? {} : { text: r.text } }, said);
    }
    if ("gone" in r) {
      return stop(EXIT_NO_MEMORY, `${uri} is already gone; nothing was deleted; ${list}`, "", "no-memory");
    }
    const reading = r.during === "read";
    return failed(r, reading ? "reading it" : "delete", uri, reading ? "; nothing was deleted" : "");
  }
  if (action === "export") {
    const pack = await inspect.exportMemories(slow);
    if (!(pack instanceof Uint8Array)) return failed(pack, "export", MEMORIES);
    const error = await writeNew(uri, pack);
    if (error) return stop(2, `cannot write ${uri} (${error}); nothing was written over`);
    return say({ file: uri, bytes: pack.length }, [
      `exported your memories to ${uri} (${pack.length} bytes, an OpenViking .ovpack)`,
    ]);
  }
  if (action === "import") {
    const pack = await readPack(uri);
    if (typeof pack === "string") return stop(2, `${pack}; nothing was imported`);
    const before = await inspect.exportMemories(slow);
    const had = before instanceof Uint8Array;
    if (!had && !isNotFound(before)) return failed(before, "export", MEMORIES, "; nothing was imported");
    const stamp = new Date(now).toISOString().replace(/[:.]/g, "-");
    const backup = had ? joinPath(dirName(uri), `memories-before-import-${stamp}.ovpack`) : undefined;
    const error = had && await writeNew(backup!, before);
    if (error) {
      const fix = "put the pack in a directory you can write: the backup goes beside it";
      return stop(
        1,
        `cannot keep what import would replace in ${backup} (${error}); nothing was imported`,
        fix,
      );
    }
    const done = await inspect.importMemories(slow, pack);
    if (!done.ok) {
      const untouched = "replacedNothing" in done && done.replacedNothing;
      if (untouched && backup) await Deno.remove(backup).catch(() => undefined);
      const after = untouched
        ? "; nothing was replaced"
        : backup
        ? `; what it may have replaced is in ${backup}`
        : "";
      return failed(done, "import", MEMORIES, after);
    }
    const kept = backup
      ? `; what it replaced is in ${backup} (\`${commandName(env)} memories import ${backup}\` puts it back)`
      : "";
    return say({ file: uri, uri: done.result, backup }, [`imported ${uri} into ${done.result}${kept}`]);
  }
  const roots = await inspect.memoryRoots(client, peer.peerId);
  if (!Array.isArray(roots)) return failed(roots, "listing", "viking://~/peers");
  const l = o.search !== undefined
    ? await inspect.searchMemories(client, roots, recallQuery(o.search, config.redact)) // as a prompt leaves
    : await inspect.listMemories(client, roots);
  const [first] = l.failures;
  if (first && l.failures.length === roots.length) {
    return failed(first.failure, o.search !== undefined ? "search" : "listing", first.root.uri);
  }
  const failures = l.failures.map((f) => ({ uri: f.root.uri, message: f.failure.error.message }));
  const value = { roots, memories: l.memories, failures };
  const code = failures.length && !l.memories.length ? 1 : 0;
  return say(value, renderListing({ roots, ...l }, now, o.search), code);
}
