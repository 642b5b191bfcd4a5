/**
 * What a chaos schedule must leave behind (README "Fault campaign and fuzzing"), checked once the server is
 * healthy, every process has ended and the queue and the rejected place were replayed.
 */

import type { FakeOpenViking, RecordedRequest, StoredMessage } from "../support/fake-openviking.ts";
import { QueueEntrySchema } from "../../openviking/queue.ts";
import { QUEUE_FILE } from "../support/queue.ts";
import { LedgerEntrySchema } from "../../memory/ledger.ts";
import { SessionStateSchema } from "../../memory/state.ts";
import { readJournal, scanTurns, turnLineFilter } from "../../kimi/journal/turns.ts";
import { messagesOf } from "../../scripts/turns.ts";
import { MARK, SECRET } from "./journal-model.ts";
import { originOfRequest, type Processes } from "./procs.ts";

const nameOf = (path: string) => path.slice(path.lastIndexOf("/") + 1);

/**
 * Problems with the state and queue files as they are right now, while processes run and get killed: each one
 * must parse whole (writes are atomic), queue entries against the queue schema.
 */
export async function snapshotProblems(ov: string): Promise<{ files: number; problems: string[] }> {
  const problems: string[] = [];
  let files = 0;
  for (const f of await walk(ov)) {
    const kind = f.isDir ? undefined : kindOf(ov, f.path);
    const name = nameOf(f.path);
    if (!(kind?.queue ? kind.queue.test(name) : kind?.state === "session" && name.endsWith(".json"))) {
      continue;
    }
    const found = await fileProblems(f.path, kind!);
    if (found === undefined) continue; // sent, renamed or replaced meanwhile
    files++;
    problems.push(...found.map((p) => `${p} mid-run`));
  }
  return { files, problems };
}

/** Which queue or state a file under `ov` belongs to, by where it is; undefined: neither. */
function kindOf(ov: string, path: string) {
  if (path.startsWith(`${ov}/pending/kimicode/`) || path.startsWith(`${ov}/pending/kimicode-rejected/`)) {
    return { queue: QUEUE_FILE, schema: QueueEntrySchema };
  }
  if (path.startsWith(`${ov}/hook-state/`) && path.endsWith("/pruned.txt")) return undefined; // names, one a line
  if (path.startsWith(`${ov}/hook-state/`)) return { state: "session", schema: SessionStateSchema };
  if (path.startsWith(`${ov}/state/`)) return { state: "plain", schema: undefined };
}

/**
 * What is wrong with a queue entry or state file: a name the queue does not use, text that does not parse,
 * a value its schema (a JSON object for `state/`) refuses; undefined when it is gone.
 */
async function fileProblems(path: string, kind: NonNullable<ReturnType<typeof kindOf>>) {
  if (kind.queue && !kind.queue.test(nameOf(path))) return [`unexpected file in the queue: ${nameOf(path)}`];
  const text = await Deno.readTextFile(path).catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    const object = value !== null && typeof value === "object" && !Array.isArray(value);
    return (kind.schema ? kind.schema.safeParse(value).success : object)
      ? []
      : [`${path} does not match its schema`];
  } catch {
    return [`${path} does not parse: ${JSON.stringify(text.slice(0, 80))}`];
  }
}

/**
 * What is wrong with one entry under `ov` (~/.openviking): a mode other than 0700 (directory) or 0600 (file),
 * and for a queue entry or state file its name, its parse and its schema (temp files and locks aside: they
 * are counted, not read).
 */
export async function privateFileProblems(ov: string, f: Walked): Promise<string[]> {
  const want = f.isDir ? 0o700 : 0o600;
  const problems = f.mode === want
    ? []
    : [`${f.path} has mode ${f.mode.toString(8)}, not ${want.toString(8)}`];
  const kind = f.isDir || f.path.endsWith(".tmp") || f.path.includes(".lock")
    ? undefined
    : kindOf(ov, f.path);
  return kind ? [...problems, ...await fileProblems(f.path, kind) ?? []] : problems;
}

/** A file or directory found under a directory, with its permission bits. */
export type Walked = { path: string; isDir: boolean; mode: number };

/** Every file and directory under `dir` (none when it is missing), links not followed. */
export async function walk(dir: string): Promise<Walked[]> {
  const entries = await Array.fromAsync(Deno.readDir(dir)).catch(() => []);
  const out: Walked[] = [];
  for (const e of entries) {
    const path = `${dir}/${e.name}`;
    const info = await Deno.lstat(path).catch(() => undefined);
    if (!info) continue;
    out.push({ path, isDir: info.isDirectory, mode: (info.mode ?? 0) & 0o777 });
    if (info.isDirectory) out.push(...await walk(path));
  }
  return out;
}

const keyOf = (m: { turn_id?: unknown; role?: unknown; content?: unknown }) =>
  JSON.stringify([m.turn_id, m.role, m.content]);

/**
 * The stored messages with their text, an answer sent in parts joined: a forced capture that took a turn open
 * sent its answer so far, and a later capture only what it gained (ARCHITECTURE decision 8). A message that is
 * no expected one but the start of one of its turn and role takes the texts of that turn and role after it
 * for as long as they continue it.
 */
function joinParts(stored: StoredMessage[], expected: { turn_id: string; role: string; content: string }[]) {
  const out: [StoredMessage, string][] = [];
  const open = new Map<string, [StoredMessage, string]>(); // turn:role → the parts joined so far
  const starts = (m: StoredMessage, text: string) =>
    expected.some((e) => e.turn_id === m.turn_id && e.role === m.role && e.content.startsWith(text));
  for (const m of stored) {
    const id = `${m.turn_id}:${m.role}`;
    const text = String(m.content ?? "");
    const part = open.get(id);
    if (part && starts(m, part[1] + text)) {
      part[1] += text;
      continue;
    }
    const entry: [StoredMessage, string] = [m, text];
    out.push(entry);
    if (!expected.some((e) => keyOf(e) === keyOf(m)) && text && starts(m, text)) open.set(id, entry);
    else open.delete(id);
  }
  return out;
}

/** Audits the sandbox after a schedule; `userFiles` (path → content) must be byte-identical. */
export async function audit(input: {
  home: string;
  sessionId: string;
  journalPath: string;
  fake: FakeOpenViking;
  procs: Processes;
  abandoned: number;
  apiKey: string;
  userFiles: Record<string, string>;
  snapshots: { files: number; problems: string[] };
}) {
  const { fake, procs } = input;
  const violations: string[] = [...input.snapshots.problems];
  const ov = `${input.home}/.openviking`;

  const expected = await messagesOf(input.journalPath, { maxLength: 24_000, redact: true });
  const turns =
    scanTurns((await readJournal(input.journalPath, undefined, turnLineFilter)).lines).turns.length;
  const stored = fake.messages(`kc-${input.sessionId}`);
  const expectedIndex = new Map(expected.map((m, i) => [keyOf(m), i]));

  const requestOf = new Map<StoredMessage, RecordedRequest>();
  const lastSeqOf = new Map<string, number>();
  for (const r of fake.requests) {
    const origin = originOfRequest(r.headers);
    lastSeqOf.set(origin, Math.max(lastSeqOf.get(origin) ?? 0, r.seq));
    if (!r.route.includes("/messages")) continue;
    const body = r.body as { messages?: unknown } | undefined;
    for (const m of Array.isArray(body?.messages) ? body.messages : [body]) {
      if (m && typeof m === "object") requestOf.set(m as StoredMessage, r);
    }
  }
  const origin = (m: StoredMessage | undefined) => originOfRequest(requestOf.get(m!)?.headers ?? {});
  const killedWriters = new Set(procs.kills.filter((k) => k.writer).map((k) => k.origin));
  const rejectedReplays = new Set(
    procs.runs.filter((r) => r.label === "replay --rejected").map((r) => r.origin),
  );
  /** Sent in the last request of a writer killed by -9: it never read the reply. */
  const inDoubt = (m: StoredMessage) =>
    requestOf.has(m) && killedWriters.has(origin(m)) && lastSeqOf.get(origin(m)) === requestOf.get(m)!.seq;

  const copies = new Map<string, StoredMessage[]>();
  let unexpected = 0;
  for (const [m, text] of joinParts(stored, expected)) {
    const k = keyOf({ ...m, content: text });
    if (text.includes(MARK)) {
      violations.push(`injected text was captured: ${JSON.stringify(text.slice(0, 120))}`);
    }
    if (text.includes(SECRET)) {
      violations.push(`a secret was captured: ${JSON.stringify(text.slice(0, 120))}`);
    }
    if (!expectedIndex.has(k)) {
      unexpected++;
      violations.push(`the server has a message the journal's closed turns do not: ${k.slice(0, 200)}`);
    } else copies.set(k, [...(copies.get(k) ?? []), m]);
  }
  const asked = fake.requests.filter((r) => r.route === "GET /api/v1/sessions/:id/context" && r.answered);
  /** The process sending `resend` asked the session after the server had handled `earlier`. */
  const knew = (earlier: RecordedRequest, resend: RecordedRequest) =>
    asked.some((g) =>
      originOfRequest(g.headers) === originOfRequest(resend.headers) && g.seq < resend.seq &&
      (g.handled ?? 0) > (earlier.handled ?? Infinity)
    );
  let duplicates = 0;
  let killExplained = 0;
  for (const list of copies.values()) {
    duplicates += list.length - 1;
    for (let i = 1; i < list.length; i++) {
      const resend = requestOf.get(list[i]);
      if (list.slice(0, i).some((m) => inDoubt(m) && resend && !knew(requestOf.get(m)!, resend))) {
        killExplained++;
      }
    }
  }
  const lost = expected.filter((m) => !copies.has(keyOf(m)));
  for (const m of lost) violations.push(`lost: ${keyOf(m).slice(0, 200)}`);
  const lostReplyWrites = fake.lostReplyMessages;
  if (duplicates - killExplained > lostReplyWrites) {
    violations.push(
      `${duplicates} duplicates, ${killExplained} explained by kills, but only ${lostReplyWrites} lost-reply writes`,
    );
  }
  const resent = new Set(
    [...copies].filter(([, list]) => rejectedReplays.has(origin(list[0]))).map(([k]) => k),
  );
  const firstOrder = [...copies.keys()].filter((k) => !resent.has(k)).map((k) => expectedIndex.get(k)!);
  const outOfOrder = firstOrder.filter((x, i) => i > 0 && x < firstOrder[i - 1]).length;
  if (outOfOrder) violations.push(`${outOfOrder} messages reached the server before an earlier one`);
  const detail = [
    `expected ${expected.map((m) => `${m.turn_id}:${m.role}`).join(" ")}`,
    ...stored.map((m) => {
      const r = requestOf.get(m);
      return `stored ${m.turn_id}:${m.role} by #${r?.seq} ${r?.route} from ${origin(m)}`;
    }),
    ...procs.runs.map((r) => `ran ${r.origin} ${r.label}${r.killed ? " (killed)" : ""}`),
    ...procs.kills.map((k) => `killed ${k.label} ${k.origin} (pid ${k.pid})`),
  ];

  let orphanTemps = 0;
  for (const f of await walk(ov)) {
    violations.push(...await privateFileProblems(ov, f));
    const name = nameOf(f.path);
    if (f.isDir) continue;
    if (name.endsWith(".tmp")) {
      orphanTemps++;
      continue;
    }
    if (f.path.includes(".lock")) continue; // the owner pid file of a lock left by a killed holder
    const kind = kindOf(ov, f.path);
    const ledger = f.path.startsWith(`${ov}/ledger/kimicode/`) && name.endsWith(".jsonl");
    if (kind?.queue?.test(name)) {
      violations.push(`queue or rejected place not empty after the final replays: ${name}`);
    }
    if (kind) continue;
    if (!ledger && !f.path.startsWith(`${ov}/logs/`)) {
      violations.push(`unexpected file ${f.path}`);
      continue;
    }
    const text = await Deno.readTextFile(f.path);
    if (text.includes(input.apiKey)) violations.push(`the API key is in ${f.path}`);
    for (const line of ledger ? text.split("\n").filter(Boolean) : []) {
      if (!LedgerEntrySchema.safeParse(JSON.parse(line)).success) {
        violations.push(`a ledger line of ${name} does not match the ledger schema: ${line.slice(0, 80)}`);
      }
    }
  }
  if (!(await Deno.stat(`${ov}/hook-state/kimicode/${input.sessionId}.json`).then(() => true, () => false))) {
    violations.push("no capture state was written");
  }
  for (const [path, content] of Object.entries(input.userFiles)) {
    if ((await Deno.readTextFile(path).catch(() => "<missing>")) !== content) {
      violations.push(`${path} was changed`);
    }
  }

  for (const run of procs.runs.filter((r) => !r.killed)) {
    const out = await run.ended;
    if (run.label.startsWith("replay")) {
      if (out.code !== 0 && out.code !== 1) {
        violations.push(`replay exited ${out.code}: ${out.stderr.slice(0, 300)}`);
      }
      continue;
    }
    if (out.code !== 0) violations.push(`${run.label} exited ${out.code}`);
    if (out.stderr !== "") violations.push(`${run.label} wrote to stderr: ${out.stderr.slice(0, 300)}`);
    const documented = run.label === "hook user-prompt-submit"
      ? out.stdout === "" || /^(?:<openviking-context[\s>]|openviking-kimi: )/.test(out.stdout) // or our one-line notices
      : out.stdout === "";
    if (!documented) violations.push(`${run.label} printed ${JSON.stringify(out.stdout.slice(0, 200))}`);
  }

  // For the summary: duplicates whose earlier copy went to a process killed before it read the reply
  // (killExplained) and messages whose reply the fake lost (lostReplyWrites) are the allowed ones; resent:
  // refused for good while the server was faulty, delivered by `replay --rejected`.
  return {
    turns,
    expected: expected.length,
    delivered: expected.length - lost.length,
    lost: lost.length,
    duplicates,
    killExplained,
    lostReplyWrites,
    outOfOrder,
    resentRejected: resent.size,
    abandoned: input.abandoned,
    snapshotFiles: input.snapshots.files,
    orphanTemps,
    unexpected,
    violations,
    /** What was stored by whom, what ran and what was killed: printed for a failing schedule. */
    detail,
  };
}
