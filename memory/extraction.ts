/** The extraction alarm (commits that make no memory, again and again), and what each workspace's commits made. */

import * as z from "zod/mini";
import { type Budget, type OpenVikingClient, readContent } from "../openviking/client.ts";
import { originOf } from "../openviking/config.ts";
import { parseJsonOrUndefined, readJson, writeFileAtomic } from "../lib/fs.ts";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { joinPath } from "../lib/paths.ts";
import { SESSION_PREFIX } from "./context.ts";

/** Failed extractions, or commits that made nothing, in a row that sound the alarm. */
export const [FAILED_IN_A_ROW, EMPTY_IN_A_ROW] = [3, 20];

/** The alarm: how many of the newest commits made nothing, how many failed, the newest failure's words. */
const AlarmSchema = z.object({
  origin: z.string(),
  commits: z.number(),
  failed: z.number(),
  error: z.optional(z.string()),
});
export type Alarm = z.infer<typeof AlarmSchema>;

/** Memories a finished commit task made: its `memories_extracted` (`total`, else the sum of its kinds). */
function memoriesMade(task: Record<string, unknown>): number {
  const made = asRecord(asRecord(task.result).memories_extracted);
  const count = (v: unknown) => typeof v === "number" && Number.isFinite(v) ? v : 0;
  return "total" in made ? count(made.total) : Object.values(made).reduce((n: number, v) => n + count(v), 0);
}

/** The alarm of our commit tasks, newest first (pure), or undefined. */
export function alarmOf(tasks: readonly unknown[], origin: string): Alarm | undefined {
  const finished = tasks.filter(isRecord).filter((t) =>
    String(t.resource_id ?? "").startsWith(SESSION_PREFIX) &&
    (t.status === "failed" || t.status === "completed")
  );
  const run = finished.findIndex((t) => t.status === "completed" && memoriesMade(t) > 0);
  const nothing = run < 0 ? finished : finished.slice(0, run);
  const failedRun = nothing.findIndex((t) => t.status !== "failed");
  const failed = failedRun < 0 ? nothing.length : failedRun;
  if (failed < FAILED_IN_A_ROW && nothing.length < EMPTY_IN_A_ROW) return undefined;
  const error = nothing.map((t) => t.error).find((e) => typeof e === "string" && e);
  const words = typeof error === "string" ? { error: error.slice(0, 1000) } : {};
  return { origin, commits: nothing.length, failed, ...words };
}

/** Our newest commit tasks, newest first (the most the server lists), or null when it could not be asked. */
async function commitTasks(client: OpenVikingClient, budget?: Budget): Promise<unknown[] | null> {
  const list = await client.request("GET", "/api/v1/tasks", z.array(z.unknown()), {
    query: { task_type: "session_commit", limit: 200 },
    peerId: null,
    budget,
  });
  return list.ok ? list.result : null;
}

/** Asks the server for our newest commit tasks: the alarm, undefined (none), or null (it could not be asked). */
export async function askAlarm(client: OpenVikingClient): Promise<Alarm | undefined | null> {
  const tasks = await commitTasks(client);
  return tasks && alarmOf(tasks, originOf(client.options.baseUrl));
}

/** The memories a completed commit added or updated, from its memory diff; null: the diff could not be read. */
export async function memoriesOf(
  client: OpenVikingClient,
  task: Record<string, unknown>,
  budget?: Budget,
): Promise<string[] | null> {
  const uri = asRecord(task.result).memory_diff_uri;
  if (typeof uri !== "string") return [];
  const read = await readContent(client, uri, { budget });
  return read.ok ? Object.values(diffChanges(read.result)).flat() : null;
}

/** The URIs memory diff `diff` (its JSON text) added and updated (pure; a damaged diff names none). */
export function diffChanges(diff: string): { added: string[]; updated: string[] } {
  const ops = asRecord(asRecord(parseJsonOrUndefined(diff)).operations);
  const uris = (list: unknown) =>
    (Array.isArray(list) ? list : []).filter(isRecord).map((o) => o.uri).filter((u) => typeof u === "string");
  return { added: uris(ops.adds), updated: uris(ops.updates) };
}

/** Which workspace (peer) each of our sessions ran in, the commits whose diff was read, what each peer's made. */
const MadeSchema = z.object({
  sessions: z.record(z.string(), z.string()),
  read: z.array(z.string()),
  made: z.record(z.string(), z.array(z.string())),
});
type Made = z.infer<typeof MadeSchema>;

const madeFile = (dir: string) => joinPath(dir, "kimicode-made.json");
const [MADE_KEPT, DIFFS_PER_RUN] = [1000, 10];

/** The file's records, keyed by peer and session names of any spelling (`constructor`, `__proto__`: no prototype). */
async function readMade(dir: string): Promise<Made> {
  const m = MadeSchema.safeParse(dir ? await readJson(madeFile(dir)) : undefined);
  const bare = <T>(r: Record<string, T> = {}): Record<string, T> => Object.assign(Object.create(null), r);
  return { sessions: bare(m.data?.sessions), read: m.data?.read ?? [], made: bare(m.data?.made) };
}

/** The memories the commits of workspace `peer`'s sessions made (none without a peer or a home). */
export async function madeIn(dir: string, peer: string): Promise<Set<string>> {
  return new Set(peer ? (await readMade(dir)).made[peer] : []);
}

/** Records `here`'s workspace and reads the memory diffs of finished commits of sessions with a known one. */
async function noteMade(
  client: OpenVikingClient,
  dir: string,
  tasks: readonly unknown[],
  here: { session: string; peer: string },
  budget?: Budget,
): Promise<void> {
  const m = await readMade(dir);
  if (here.session && here.peer) m.sessions[here.session] = here.peer;
  const due = tasks.filter(isRecord).filter((t) =>
    t.status === "completed" && m.sessions[String(t.resource_id)] && !m.read.includes(String(t.task_id))
  ).slice(0, DIFFS_PER_RUN);
  for (const t of due) {
    const peer = m.sessions[String(t.resource_id)];
    const uris = await memoriesOf(client, t, budget);
    if (!uris) continue;
    m.made[peer] = [...new Set([...(m.made[peer] ?? []), ...uris])].slice(-MADE_KEPT);
    m.read.push(String(t.task_id));
  }
  const sessions = Object.fromEntries(Object.entries(m.sessions).slice(-MADE_KEPT));
  const peers = new Set(Object.values(sessions));
  const made = Object.fromEntries(Object.entries(m.made).filter(([peer]) => peers.has(peer)));
  const kept = JSON.stringify({ sessions, read: m.read.slice(-MADE_KEPT), made });
  await writeFileAtomic(madeFile(dir), `${kept}\n`).catch(() => {});
}

const alarmFile = (dir: string) => joinPath(dir, "kimicode-extraction-alarm.json");

/** Asks the server for our commit tasks and keeps the alarm and what the commits made in `dir`; null: not asked. */
export async function checkExtraction(
  client: OpenVikingClient,
  dir: string,
  here = { session: "", peer: "" },
  budget?: Budget,
): Promise<Alarm | undefined | null> {
  const tasks = dir ? await commitTasks(client, budget) : null;
  if (!tasks) return null;
  const alarm = alarmOf(tasks, originOf(client.options.baseUrl));
  if (alarm) await writeFileAtomic(alarmFile(dir), `${JSON.stringify(alarm)}\n`).catch(() => {});
  else await Deno.remove(alarmFile(dir)).catch(() => {});
  await noteMade(client, dir, tasks, here, budget);
  return alarm;
}

/** The alarm kept in `dir` for `baseUrl`'s server, or undefined (none, another server's, or not one). */
export async function readAlarm(dir: string, baseUrl: string): Promise<Alarm | undefined> {
  const a = AlarmSchema.safeParse(dir ? await readJson(alarmFile(dir)) : undefined);
  return a.success && a.data.origin === originOf(baseUrl) ? a.data : undefined;
}

/** What the alarm says, and the fix (pure): `failed` quotes the server's words for the newest failure. */
export function alarmWords(a: Alarm): { kind: "failed" | "empty"; summary: string; fix: string } {
  const words = a.error?.replace(/\s+/g, " ").trim().slice(0, 200);
  const fix =
    "check the server's model configuration (`vlm`, and `embedding`, in its ov.conf) and its log; " +
    "the next commit after the fix makes memory again";
  if (a.failed >= FAILED_IN_A_ROW) {
    return {
      kind: "failed",
      summary: `the last ${a.failed} memory extractions on the server failed: ${words ?? "no reason given"}`,
      fix,
    };
  }
  const said = words ? ` (the server said: ${words})` : "";
  const empty = `${fix} (a chat model that cannot do extraction makes nothing, silently)`;
  return { kind: "empty", summary: `the last ${a.commits} commits made no memory${said}`, fix: empty };
}
