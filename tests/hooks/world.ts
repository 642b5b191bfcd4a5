/** The hook tests' world: a sandbox home on the fake OpenViking and one Kimi session's hooks, run in-process. */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking, type FakeOptions } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { runIn } from "../cli/in-process.ts";
import { waitUntil } from "../support/kimi.ts";
import { readState } from "../../memory/state.ts";
import { HOOKS } from "../../kimi/hooks.ts";

export const SESSION = "session_bb98d39e-e56d-47b5-bd98-4e903585486d";
export const CWD = "/home/user/proj";

/** The payload Kimi sends for `event` (`hook <event>`) of `session`. */
export function stdinOf(event: string, session = SESSION, extra: Record<string, unknown> = {}): string {
  const name = HOOKS.find((h) => h.cli === event)?.event ?? event;
  return JSON.stringify({ hook_event_name: name, session_id: session, cwd: CWD, ...extra });
}

type Check = { id: string; status: string; summary: string; detail?: string[]; fix?: string };

/** `doctor --json` in-process in `env`: its exit code and its checks by id. */
export async function doctorChecks(env: Record<string, string>) {
  const r = await runIn(env, ["doctor", "--json"]);
  return {
    code: r.code,
    checks: Object.fromEntries((JSON.parse(r.stdout).checks as Check[]).map((c) => [c.id, c])),
  };
}

/** `doctor --json` in-process in `env`: its exit code and the check `id`. */
export async function doctorCheck(env: Record<string, string>, id: string) {
  const { code, checks } = await doctorChecks(env);
  return { code, ...checks[id] };
}

/** Every path under `dir` (recursively), relative to it, sorted; `keep` picks which. */
export function pathsUnder(dir: string, keep: (path: string, e: Deno.DirEntry) => boolean = () => true) {
  const walk = (d: string): string[] =>
    [...Deno.readDirSync(d)].flatMap((e) => {
      const p = `${d}/${e.name}`;
      return [...keep(p, e) ? [p.slice(dir.length)] : [], ...e.isDirectory ? walk(p) : []];
    });
  try {
    return walk(dir).sort();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return [];
  }
}

/** Every path under `dir` with its size and mtime: a snapshot that any write changes. */
export const snapshot = (dir: string) =>
  pathsUnder(dir).map((p) => {
    const info = Deno.lstatSync(`${dir}${p}`);
    return `${p} ${info.size} ${info.mtime?.getTime()}`;
  });

/** Polls `cond` every 50 ms until it holds; throws after `timeoutMs`. */
export const waitFor = (what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 30_000) =>
  waitUntil(cond, timeoutMs, what, 50).then(() => {});

/** A world: `env` over sandboxEnv (every-turn, no capture wait), the fake started with `fake`. */
export async function world(
  options: { env?: Record<string, string>; fake?: FakeOptions; session?: string } = {},
) {
  const [dir, fake] = [await tempDir(), await FakeOpenViking.start(options.fake)];
  const [home, session] = [dir.path, options.session ?? SESSION];
  const ov = `kc-${session}`;
  const env = sandboxEnv(home, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0", ...options.env });
  const stateFile = (s = session) => `${home}/.openviking/hook-state/kimicode/${s}.json`;
  const journals = new Map<string, JournalBuilder>();
  const builder = (s: string) => journals.get(s) ?? journals.set(s, new JournalBuilder()).get(s)!;
  const runAs = async (s: string, event: string, extra: Record<string, unknown> = {}, more = {}) =>
    (await hookIn(event, { env: { ...env, ...more }, stdin: stdinOf(event, s, extra) })).stdout;
  return {
    home,
    env,
    fake,
    session,
    ov,
    pending: `${home}/.openviking/pending`,
    stateFile,
    state: (s = session) => readState(stateFile(s)),
    promptState: (s = session) => readState(stateFile(`${s}.prompt`)),
    journal: (text: string, s = session) => placeJournal(home, s, text),
    /** One whole turn more in session `s`'s journal (`say`'s builder); the journal's path. */
    say: (user: string, answer = `an answer to: ${user}`, s = session) =>
      placeJournal(home, s, builder(s).simpleTurn(user, answer).toString()),
    /** `n` whole turns more, `question i` / `answer i` (i counts the session's turns); the journal's path. */
    turns: (n: number, s = session) => {
      const j = builder(s);
      for (let k = 0; k < n; k++) j.simpleTurn(`question ${j.turnId + 1}`, `answer ${j.turnId + 1}`);
      return placeJournal(home, s, j.toString());
    },
    /** Runs `hook <event>` in-process, `more` over the environment; its stdout. */
    run: (event: string, extra: Record<string, unknown> = {}, more: Record<string, string> = {}) =>
      runAs(session, event, extra, more),
    /** Runs `hook <event>` of session `s` in-process, `more` over the environment; its stdout. */
    runAs,
    /** Runs `hook <event>`, which must print nothing. */
    hook: async (event: string, extra: Record<string, unknown> = {}, s = session) =>
      assertEquals(await runAs(s, event, extra), ""),
    /** `openviking-kimi <args>` in-process in the world's environment. */
    cli: (...args: string[]) => runIn(env, args),
    /** The session's stored messages as `turn:role`. */
    stored: (s = ov) => fake.messages(s).map((m) => `${m.turn_id}:${m.role}`),
    commits: (s = ov) => fake.sessions.get(s)?.commits ?? 0,
    async [Symbol.asyncDispose]() {
      await fake.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}
export type World = Awaited<ReturnType<typeof world>>;

/** The recorded three-turn session of Kimi 2.1.0, resumed. */
export const RESUMED = new URL("../fixtures/journals/2.1.0/resumed/wire.jsonl", import.meta.url);
export type Condition = "fine" | "down" | "slow" | "500" | "no-batch";
export const CONDITIONS: Condition[] = ["fine", "down", "slow", "500", "no-batch"];

/** A world on the recorded three-turn session whose server is in `condition`. */
export async function sandbox(condition: Condition): Promise<World> {
  const noBatch = condition === "no-batch" ? 404 : undefined;
  const w = await world({ fake: { noBatch }, env: { OPENVIKING_PROMPT_BUDGET_MS: "2500" } });
  if (condition === "down") await w.fake.close();
  else if (condition === "slow") w.fake.fault({ route: "*", delayMs: 4000 });
  else if (condition === "500") w.fake.fault({ route: "*", status: 500 });
  await w.journal(await Deno.readTextFile(RESUMED));
  return w;
}
