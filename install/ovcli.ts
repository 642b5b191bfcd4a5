/**
 * Connection settings merged into `~/.openviking/ovcli.conf` as OpenViking's other installers do (unknown
 * fields kept, `""` deletes); the key asked of the user, never shown, and asked of the server before it is
 * saved: a root key (refused on memory's routes) becomes a user key made with the admin API, used for those
 * requests only, never written, logged or printed.
 */

import * as z from "zod/mini";
import { parseJson } from "./json-files.ts";
import type { Edit, Result } from "./spec.ts";
import { HealthReply } from "./check.ts";
import type { Context } from "./transaction.ts";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { readJson } from "../lib/fs.ts";
import { type Env, urlProblem } from "../lib/paths.ts";
import { commandName } from "../lib/self.ts";
import { USER_AGENT } from "../lib/version.ts";
import { adviceFor, asSentence, isRootKeyRefusal } from "../openviking/advice.ts";
import { askDataAccess, createClient, type OpenVikingClient, type OvFailure } from "../openviking/client.ts";
import { credentialFilePaths, DEFAULT_BASE_URL, loadConfig, originOf } from "../openviking/config.ts";

/**
 * Connection settings given on the command line (`undefined` = not given, `""` = delete); `apiKeyFrom`: where
 * the key came from (stdin, the environment, the terminal), said next to "not shown".
 */
export type CredentialArgs = {
  url?: string;
  apiKey?: string;
  apiKeyFrom?: string;
  account?: string;
  user?: string;
};

/** One setting written (`shown`: the value as said) or deleted. */
type Setting = { name: string; shown?: string; note?: string };

/** A setting as done (`url = …`, `account deleted`) or, `planned`, to do (`set url to …`, `delete account`). */
function said(s: Setting, planned: boolean): string {
  const note = s.note ? ` (${s.note})` : "";
  if (s.shown === undefined) return planned ? `delete ${s.name}${note}` : `${s.name} deleted${note}`;
  if (!planned) return `${s.name} = ${s.shown}`;
  return s.shown.startsWith("(") ? `set ${s.name} ${s.shown}` : `set ${s.name} to ${s.shown}`;
}

/** Sets (or with "" deletes) the server URL in `doc`; says what it did, or why the URL is refused. */
function mergeUrl(doc: Record<string, unknown>, given: string, settings: Setting[]): string | undefined {
  const url = given.trim().replace(/\/+$/, "");
  if (url === "") {
    delete doc.url;
    settings.push({ name: "url", note: "the default http://127.0.0.1:1933 applies" });
    return undefined;
  }
  const problem = urlProblem(given);
  if (problem) return problem;
  doc.url = url;
  settings.push({ name: "url", shown: url });
  return undefined;
}

/**
 * Sets (or with "" deletes) key, account and user. A saved key never follows the URL to another origin, and
 * is not deleted for it unasked (a mistyped URL would lose it): the refusal says how to go on.
 */
function mergeIdentity(
  doc: Record<string, unknown>,
  args: CredentialArgs,
  settings: Setting[],
  keyWasFor: string,
  path: string,
): string | undefined {
  const url = typeof doc.url === "string" ? doc.url : DEFAULT_BASE_URL;
  const moved = args.url !== undefined && originOf(url) !== originOf(keyWasFor);
  if (moved && args.apiKey === undefined && typeof doc.api_key === "string") {
    return `${path} holds the API key saved for ${originOf(keyWasFor)}, and a key is never sent to another ` +
      `address: --url ${originOf(url)} would delete it. Give that server's key (--api-key-stdin), or ` +
      `--api-key "" to delete the saved one; nothing was changed.`;
  }
  const replaced = typeof doc.api_key === "string" && doc.api_key !== args.apiKey
    ? `the key saved for ${originOf(keyWasFor)}`
    : undefined;
  if (args.apiKey === "") {
    if (doc.api_key !== undefined) settings.push({ name: "api_key", note: replaced });
    delete doc.api_key;
  } else if (args.apiKey !== undefined) {
    doc.api_key = args.apiKey;
    doc.url ??= keyWasFor;
    const from = args.apiKeyFrom ? `; from ${args.apiKeyFrom}` : "";
    settings.push({
      name: "api_key",
      shown: `(not shown${from}${replaced ? `; it replaces ${replaced}` : ""})`,
    });
  }
  const ids = [["account", "account_id", args.account], ["user", "user_id", args.user]] as const;
  for (const [name, alias, value] of ids) {
    if (value === undefined) continue;
    const had = doc[name] !== undefined || doc[alias] !== undefined;
    delete doc[alias];
    if (value === "") delete doc[name];
    else doc[name] = value;
    if (value !== "" || had) settings.push({ name, shown: value || undefined }); // nothing deleted, nothing said
  }
  return undefined;
}

/**
 * Plans `args` merged into ovcli.conf (`keyWasFor`: the address a saved key was for, {@link savedConnection}):
 * what it holds after (`summary`), what a dry run says it would do (`steps`).
 */
export function planOvcli(
  current: string | undefined,
  args: CredentialArgs,
  path: string,
  keyWasFor = DEFAULT_BASE_URL,
): Edit<{ summary: string[]; steps: string[] }> {
  if ([args.url, args.apiKey, args.account, args.user].every((v) => v === undefined)) {
    return { ok: true, after: current, changed: false, summary: [], steps: [] };
  }
  let doc: Record<string, unknown> = {};
  if (current !== undefined && current.trim() !== "") {
    const parsed = parseJson(current);
    if (!parsed.ok || !isRecord(parsed.value)) {
      return {
        ok: false,
        error:
          `${path} is not a JSON object${parsed.ok ? "" : ` (${parsed.error})`}. Fix it or move it away, ` +
          "then run install again; nothing was changed.",
      };
    }
    doc = { ...parsed.value };
  }
  const settings: Setting[] = [];
  const refused = args.url !== undefined ? mergeUrl(doc, args.url, settings) : undefined;
  if (refused) return { ok: false, error: refused };
  const keyRefused = mergeIdentity(doc, args, settings, keyWasFor, path);
  if (keyRefused) return { ok: false, error: keyRefused };
  const style = current?.trim() ? current : "\n";
  const indent = /\n([ \t]+)\S/.exec(style)?.[1] ?? "  ";
  const eol = style.includes("\r\n") ? "\r\n" : "\n";
  const after = JSON.stringify(doc, null, indent).replace(/\n/g, eol) + (/\n$/.test(style) ? eol : "");
  return {
    ok: true,
    after,
    changed: after !== current,
    summary: settings.map((x) => said(x, false)),
    steps: settings.map((x) => said(x, true)),
  };
}

/** Replaces the values of secret-looking JSON fields (`api_key`, `*token*`, `*secret*`) with asterisks. */
export const maskSecrets = (text: string): string =>
  text.replace(
    /("[A-Za-z_]*(?:api_?key|token|secret|password)[A-Za-z_]*"\s*:\s*)"(?:[^"\\]|\\.)*"/gi,
    '$1"********"',
  );

const CONNECTION_VARIABLES = /^OPENVIKING_(URL|BASE_URL|MCP_URL|API_KEY|ACCOUNT|USER|PEER_ID)$/;

/** The address the credential files give now and the key saved for it ("" = none), the environment aside. */
export async function savedConnection(env: Env): Promise<{ url: string; apiKey: string }> {
  const files = Object.fromEntries(Object.entries(env).filter(([k]) => !CONNECTION_VARIABLES.test(k)));
  const { config } = await loadConfig(files);
  return { url: config.baseUrl, apiKey: config.apiKeySource === "ovcli.conf" ? config.apiKey : "" };
}

/** How the key was asked for on the command line (`apiKey`: `--api-key KEY`, "" deletes the saved key). */
export type KeyFlags = {
  apiKey: string | undefined;
  apiKeyStdin: boolean;
  url: string | undefined;
  dryRun: boolean;
};

/**
 * The terminal, stdin and the server asked about a key, injectable for tests: `askHidden` asks without echo
 * (undefined when cancelled), `needsKey` whether the server refuses memory's routes without a key.
 */
export interface KeyIo {
  env: Env;
  stdinIsTerminal(): boolean;
  readStdin(): Promise<Uint8Array>;
  askHidden(question: string): Promise<string | undefined>;
  needsKey(url: string): Promise<boolean>;
  warn(line: string): void;
}

/** The key to save (undefined: leave the saved one as it is) and where it came from, or why there is none. */
export type KeyChoice = Result<{ apiKey?: string; from?: string }>;

/** Chooses the API key install saves, from the flags (never both: cli/mod.ts refuses), stdin, the environment or a hidden prompt. */
export async function chooseApiKey(flags: KeyFlags, io: KeyIo): Promise<KeyChoice> {
  if (flags.apiKey !== undefined) {
    if (flags.apiKey !== "") {
      // Deno's own "Task install …" line echoes every argument: nothing here can stop it, so it is named.
      io.warn(
        "Warning: --api-key puts the key on the command line, where your shell history and the process list " +
          "keep it (and if you ran `deno task install` without -q, Deno has printed it too, in its " +
          '"Task install …" line). Next time use --api-key-stdin: it reads the key from a pipe (`< keyfile`) ' +
          "or, on a terminal, asks for it without showing what you type; or set OPENVIKING_API_KEY.",
      );
    }
    return { ok: true, apiKey: flags.apiKey, from: "--api-key" };
  }
  const where = flags.url?.trim().replace(/\/\/[^/@]*@/, "//");
  if (flags.apiKeyStdin) {
    if (io.stdinIsTerminal()) {
      const enter = { ok: false, error: "no API key given; nothing was changed" } as const;
      return answered(await ask(io, where, "to cancel"), enter);
    }
    const key = new TextDecoder().decode(await io.readStdin()).split(/\r?\n/)[0].trim();
    const none = "--api-key-stdin: nothing came on stdin; pipe the key in, e.g. `< keyfile`";
    return key ? { ok: true, apiKey: key, from: "stdin" } : { ok: false, error: none };
  }
  const fromEnv = io.env.OPENVIKING_API_KEY?.trim();
  if (fromEnv) return { ok: true, apiKey: fromEnv, from: "OPENVIKING_API_KEY" };
  if (!where || flags.dryRun || !io.stdinIsTerminal()) return { ok: true };
  // A key saved for that server already: a terminal is not asked for one.
  const saved = await savedConnection(io.env);
  if (saved.apiKey !== "" && originOf(saved.url) === originOf(where)) return { ok: true };
  // Enter (no key) deletes a key saved for another address, as `--api-key ""` would.
  const savedFor = saved.apiKey === "" ? undefined : originOf(saved.url);
  const none = savedFor
    ? `for none: it deletes the key saved for ${savedFor}, keeping the old file as ovcli.conf.bak`
    : "for none";
  const answer = await ask(io, where, none);
  if (answer !== "" || !await io.needsKey(where)) {
    return answered(answer, savedFor ? { ok: true, apiKey: "", from: "the terminal" } : { ok: true });
  }
  io.warn(`The server at ${where} needs an API key: without one, memory's requests are refused.`);
  const error = `no API key given, and the server at ${where} needs one; nothing was changed. Run install ` +
    "again and type the key (a user key, or the server's root key to make one), or pipe it in with " +
    "--api-key-stdin (`< keyfile`).";
  return answered(await ask(io, where, "to cancel"), { ok: false, error });
}

/** Asks the terminal for the key at `where`, saying what Enter does; undefined when cancelled. */
function ask(io: KeyIo, where: string | undefined, enter: string): Promise<string | undefined> {
  return io.askHidden(
    `OpenViking API key${where ? ` for ${where}` : ""} (a user key, or the server's root key to make one; ` +
      `not shown as you type; Enter ${enter}): `,
  );
}

/** The choice an answer makes: the key typed, `enter` for none, or cancelled. */
function answered(answer: string | undefined, enter: KeyChoice): KeyChoice {
  if (answer === undefined) return { ok: false, error: "cancelled; nothing was changed" };
  return answer === "" ? enter : { ok: true, apiKey: answer, from: "the terminal" };
}

/** Whether the server at `url` answers and refuses memory's routes without a key (no answer: it cannot say). */
export async function serverNeedsKey(url: string, fetch?: typeof globalThis.fetch): Promise<boolean> {
  if (!URL.canParse(url)) return false;
  const client = createClient({ baseUrl: url, apiKey: "", userAgent: USER_AGENT, timeoutMs: 5000, fetch });
  const data = await askDataAccess(client);
  return !data.ok && data.kind === "auth";
}

/** Asks on the terminal without echo (raw mode): Enter ends, Backspace and Ctrl-U edit, Ctrl-C cancels. */
export async function askHiddenOnTerminal(question: string): Promise<string | undefined> {
  const encoder = new TextEncoder();
  const bytes: number[] = [];
  let cancelled = false;
  // Echo off before the question shows: a key typed (or pasted) the moment it appears is never echoed.
  Deno.stdin.setRaw(true);
  try {
    await Deno.stderr.write(encoder.encode(question));
    const buf = new Uint8Array(256);
    reading: for (;;) {
      const n = await Deno.stdin.read(buf);
      if (n === null) break;
      for (const b of buf.subarray(0, n)) {
        if (b === 13 || b === 10) break reading;
        if (b === 3 || (b === 4 && bytes.length === 0)) {
          cancelled = b === 3;
          break reading;
        }
        if (b === 127 || b === 8) {
          while ((bytes.at(-1)! & 0xc0) === 0x80) bytes.pop(); // a backspace takes a whole UTF-8 character
          bytes.pop();
        } else if (b === 21) bytes.length = 0;
        else if (b >= 32) bytes.push(b);
      }
    }
  } finally {
    Deno.stdin.setRaw(false);
    await Deno.stderr.write(encoder.encode("\n"));
  }
  return cancelled ? undefined : new TextDecoder().decode(new Uint8Array(bytes)).trim();
}

/** The account and user install makes with a root key unless --account/--user name others (dev mode's own). */
const DEFAULT_ID = "default";
/** OpenViking's rule for account and user ids (openviking/core/identifiers.py). */
const ID = /^[A-Za-z0-9_.@-]+$/;

const UserKeyReply = z.looseObject({ user_key: z.string() });
const UsersReply = z.array(z.looseObject({ user_id: z.string(), api_key: z.optional(z.string()) }));

/** ov.conf's root key, unless its server runs in trusted mode (where the root key is what clients send). */
async function rootKeyOfOvConf(ctx: Context): Promise<string | undefined> {
  const path = credentialFilePaths(ctx.env).ov;
  const server = asRecord(asRecord(path ? await readJson(path) : undefined).server);
  const key = typeof server.root_api_key === "string" ? server.root_api_key.trim() : "";
  return key && server.auth_mode !== "trusted" ? key : undefined;
}

/** The commands that make a user key with the root key (in `$ROOT_KEY`), for when install cannot. */
function manualWay(url: string, account: string, user: string): string {
  const post = (path: string, body: unknown) =>
    `  curl -sS -X POST ${url}${path} -H "Authorization: Bearer $ROOT_KEY" ` +
    `-H "Content-Type: application/json" -d '${JSON.stringify(body)}'`;
  return [
    "To make a user key yourself, with the root key in $ROOT_KEY (the first command makes the account with " +
    "the user as its admin; when it answers 409, the account exists and the second adds the user):",
    post("/api/v1/admin/accounts", { account_id: account, admin_user_id: user }),
    post(`/api/v1/admin/accounts/${account}/users`, { user_id: user, role: "user" }),
    `then give the "user_key" of the reply to install: \`${commandName()} install --url ${url} --api-key-stdin\`.`,
  ].join("\n");
}

/** What a dry run saves in the key's place (never written; the diff masks it) when the server would make the key. */
const KEY_TO_MAKE = "(the user key install would make)";

/**
 * The user key of `user` in `account`, made or reused with the root key: what was done, or why not. A dry run
 * only reads the user list: the key it would reuse, else {@link KEY_TO_MAKE}, and what it would do.
 */
async function makeUserKey(
  root: OpenVikingClient,
  account: string,
  user: string,
  dryRun: boolean,
): Promise<{ key: string; said: string; after?: string } | OvFailure> {
  const exists = (r: { ok: boolean; status: number }) => !r.ok && r.status === 409;
  const post = (path: string, body: unknown) => root.request("POST", path, UserKeyReply, { body });
  const users = `/api/v1/admin/accounts/${encodeURIComponent(account)}/users`;
  const named = `user ${user} in account ${account}`;
  if (!dryRun) {
    const made = await post("/api/v1/admin/accounts", { account_id: account, admin_user_id: user });
    if (made.ok) {
      return { key: made.result.user_key, said: `made account ${account} with user ${user}, its admin` };
    }
    if (!exists(made)) return made;
    const added = await post(users, { user_id: user, role: "user" });
    if (added.ok) return { key: added.result.user_key, said: `made ${named}` };
    if (!exists(added)) return added;
  }
  const list = await root.request("GET", users, UsersReply, { query: { name: user } });
  if (!list.ok && !(dryRun && list.status === 404)) return list;
  const found = list.ok ? list.result.find((u) => u.user_id === user) : undefined;
  if (found?.api_key) {
    return { key: found.api_key, said: `${dryRun ? "would reuse" : "reused"} the key of ${named}` };
  }
  if (dryRun && !found) return { key: KEY_TO_MAKE, said: `would make ${named}` };
  // The server keeps only hashes of keys: the one way to a key is a new one.
  const fresh = dryRun ? undefined : await post(`${users}/${encodeURIComponent(user)}/key`, {});
  if (fresh && !fresh.ok) return fresh;
  return {
    key: fresh?.result.user_key ?? KEY_TO_MAKE,
    said: `${dryRun ? "would make" : "made"} a new key for ${named} (the server keeps no readable keys)`,
    after: `The user's previous key ${dryRun ? "would no longer work" : "no longer works"}.`,
  };
}

/**
 * Why a key given is not saved when the server cannot be asked (`health`: how asking failed), and the install
 * without it that works as printed: past a key saved for another address, it deletes that one (`--api-key ""`).
 */
async function uncheckedKey(ctx: Context, health: OvFailure, url: string): Promise<string> {
  const saved = await savedConnection(ctx.env);
  const other = saved.apiKey !== "" && originOf(saved.url) !== originOf(url) ? originOf(saved.url) : "";
  const without = other
    ? `\`${commandName()} install --url ${url} --api-key ""\`; it deletes the key saved for ${other}, keeping ` +
      "the old file as ovcli.conf.bak"
    : `\`${commandName()} install --url ${url}\``;
  return `the server at ${url} does not answer, so the key given cannot be checked: it is not saved and ` +
    `nothing was changed (${adviceFor(health, url).summary}). Start the server and run install again with ` +
    `the key; or install without a key now (${without}) and give it once the server answers.`;
}

/**
 * Asks the server about `given` before it is saved: the key to save, where it came from and what was (in a dry
 * run: would be) done; a refused key, or one nobody can check, stops install.
 */
export async function keyToSave(
  ctx: Context,
  given: { apiKey: string; from: string },
  target: { url: string; account?: string; user?: string; dryRun: boolean },
): Promise<Result<{ apiKey: string; from: string; said: string[] }>> {
  const account = target.account || DEFAULT_ID;
  const user = target.user || DEFAULT_ID;
  const rootByFile = given.apiKey === await rootKeyOfOvConf(ctx);
  const identity = { ...target, baseUrl: target.url, apiKey: given.apiKey, userAgent: USER_AGENT };
  const client = createClient({ ...identity, timeoutMs: 5000 }, "", { fetch: ctx.fetch });
  const health = await client.request("GET", "/health", HealthReply);
  if (health.ok && health.result.auth_mode === "trusted") return { ok: true, ...given, said: [] };
  const data = health.ok ? await askDataAccess(client) : health;
  if (data.ok || (health.ok && data.kind !== "auth")) return { ok: true, ...given, said: [] };
  if (!rootByFile && !isRootKeyRefusal(data)) {
    if (!health.ok) return { ok: false, error: await uncheckedKey(ctx, health, target.url) };
    return {
      ok: false,
      error: `the server at ${target.url} refused this key (HTTP ${data.status}: ${data.error.message}); ` +
        "it is not saved and nothing was changed. A user key comes from the server's root key (ov.conf's " +
        "server.root_api_key): give install that once and it makes one; or ask the server's admin for one.",
    };
  }
  const named = `user ${user} in account ${account}`;
  const rootKey = "the key given is OpenViking's root key (server.root_api_key), which may not use memory: " +
    "it is not saved";
  if (![account, user].every((id) => ID.test(id))) {
    return { ok: false, error: `${rootKey}; --account and --user take letters, digits and _ . @ - only.` };
  }
  const made = health.ok ? await makeUserKey(client, account, user, target.dryRun) : health;
  if ("key" in made) {
    const saved = await savedConnection(ctx.env);
    const kept = saved.apiKey === made.key && originOf(saved.url) === originOf(target.url);
    const said = `${rootKey}; with it, install ${made.said}${
      kept ? ", the key saved already" : ` and ${target.dryRun ? "save" : "saves"} that user's key instead`
    }.`;
    return {
      ok: true,
      apiKey: made.key,
      from: `the admin API: ${named}`,
      said: [said + (made.after ? ` ${made.after}` : "")],
    };
  }
  const why = asSentence(adviceFor(made, target.url).summary);
  const error =
    `${rootKey}, and no user key could be made with it: ${why} Nothing was changed. Fix that and run ` +
    "install again with the root key, or make the key yourself.\n";
  return { ok: false, error: error + manualWay(target.url, account, user) };
}
