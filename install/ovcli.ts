/**
 * Connection settings merged into `~/.openviking/ovcli.conf` as OpenViking's other installers do (unknown
 * fields kept, `""` deletes); the key asked of the user, never shown, and asked of the server before it is
 * saved: a root key (refused on memory's routes) is refused with the commands that make a user key.
 */

import { parseJson } from "./json-files.ts";
import type { Edit, Result } from "./spec.ts";
import { HealthReply } from "./check.ts";
import type { Context } from "./transaction.ts";
import { isRecord } from "../lib/parsed.ts";
import { type Env, urlProblem } from "../lib/paths.ts";
import { commandName } from "../lib/self.ts";
import { USER_AGENT } from "../lib/version.ts";
import { adviceFor, isRootKeyRefusal } from "../openviking/advice.ts";
import { askDataAccess, createClient, type OvFailure } from "../openviking/client.ts";
import { DEFAULT_BASE_URL, loadConfig, originOf } from "../openviking/config.ts";

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

type Setting = { name: string; shown?: string; note?: string };

function said(s: Setting, planned: boolean): string {
  const note = s.note ? ` (${s.note})` : "";
  if (s.shown === undefined) return planned ? `delete ${s.name}${note}` : `${s.name} deleted${note}`;
  if (!planned) return `${s.name} = ${s.shown}`;
  return s.shown.startsWith("(") ? `set ${s.name} ${s.shown}` : `set ${s.name} to ${s.shown}`;
}

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
    "again and type a user key, or pipe it in with " +
    "--api-key-stdin (`< keyfile`).";
  return answered(await ask(io, where, "to cancel"), { ok: false, error });
}

function ask(io: KeyIo, where: string | undefined, enter: string): Promise<string | undefined> {
  return io.askHidden(
    `OpenViking API key${where ? ` for ${where}` : ""} (a user key; not shown as you type; Enter ${enter}): `,
  );
}

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

/** The account and user a keyless server uses: the commands that make a user key name them unless told others. */
const DEFAULT_ID = "default";

/** Why a root key is refused, and the two admin-API commands that make a user key with it (in `$ROOT_KEY`). */
function rootKeyRefused(url: string, account: string, user: string): string {
  const post = (path: string, body: unknown) =>
    `  curl -sS -X POST ${url}${path} -H "Authorization: Bearer $ROOT_KEY" ` +
    `-H "Content-Type: application/json" -d '${JSON.stringify(body)}'`;
  return [
    "the key given is OpenViking's root key (server.root_api_key), which administers the server and may not " +
    "use memory: it is not saved and nothing was changed. Make a user key with it, the root key in $ROOT_KEY " +
    "(the first command makes the account with the user as its admin; when it answers 409, the account exists " +
    "and the second adds the user):",
    post("/api/v1/admin/accounts", { account_id: account, admin_user_id: user }),
    post(`/api/v1/admin/accounts/${encodeURIComponent(account)}/users`, { user_id: user, role: "user" }),
    `then give the "user_key" of the reply to install: \`${commandName()} install --url ${url} --api-key-stdin\`.`,
  ].join("\n");
}

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

/** Why install refuses a key, asked of the server first (exit 2 for a root key), or undefined when it is saved. */
export async function keyRefusal(
  ctx: Context,
  apiKey: string,
  target: { url: string; account?: string; user?: string },
): Promise<{ error: string; code: number } | undefined> {
  const identity = { ...target, baseUrl: target.url, apiKey, userAgent: USER_AGENT };
  const client = createClient({ ...identity, timeoutMs: 5000 }, "", { fetch: ctx.fetch });
  const health = await client.request("GET", "/health", HealthReply);
  if (health.ok && health.result.auth_mode === "trusted") return undefined;
  const data = health.ok ? await askDataAccess(client) : health;
  if (data.ok || (health.ok && data.kind !== "auth")) return undefined;
  if (!health.ok) return { error: await uncheckedKey(ctx, health, target.url), code: 1 };
  if (isRootKeyRefusal(data)) {
    return {
      error: rootKeyRefused(target.url, target.account || DEFAULT_ID, target.user || DEFAULT_ID),
      code: 2,
    };
  }
  return {
    error:
      `the server at ${target.url} refused this key (HTTP ${data.status}: ${data.error.message}); it is ` +
      "not saved and nothing was changed. Give a user key: the server's admin makes one, or you with its root " +
      'key (README: "Server with API keys").',
    code: 1,
  };
}
