/**
 * The key install saves, asked of the server first: a root key (refused on memory's routes) becomes a user key
 * made with the admin API; the root key is used for those requests only, never written, logged or printed.
 */

import * as z from "zod/mini";
import { adviceFor, asSentence, isRootKeyRefusal } from "../openviking/advice.ts";
import { credentialFilePaths, originOf } from "../openviking/config.ts";
import { savedConnection } from "./ovcli.ts";
import { askDataAccess, createClient, type OpenVikingClient, type OvFailure } from "../openviking/client.ts";
import { asRecord } from "../lib/parsed.ts";
import { readJson } from "../lib/fs.ts";
import { commandName } from "../lib/self.ts";
import { USER_AGENT } from "../lib/version.ts";
import type { Context } from "./transaction.ts";
import { HealthReply } from "./check.ts";

/** The account and user install makes with a root key unless --account/--user name others (dev mode's own). */
const DEFAULT_ID = "default";
/** OpenViking's rule for account and user ids (openviking/core/identifiers.py). */
const ID = /^[A-Za-z0-9_.@-]+$/;

/** The key to save (undefined: none yet, a dry run), where it came from and what was done; or why not. */
export type KeyOutcome =
  | { ok: true; apiKey?: string; from?: string; said: string[] }
  | { ok: false; error: string };

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

/** The user key of `user` in `account`, made or reused with the root key: what was done, or why not. */
async function makeUserKey(
  root: OpenVikingClient,
  account: string,
  user: string,
): Promise<{ key: string; said: string; after?: string } | OvFailure> {
  const exists = (r: { ok: boolean; status: number }) => !r.ok && r.status === 409;
  const made = await root.request("POST", "/api/v1/admin/accounts", UserKeyReply, {
    body: { account_id: account, admin_user_id: user },
  });
  if (made.ok) {
    return { key: made.result.user_key, said: `made account ${account} with user ${user}, its admin` };
  }
  if (!exists(made)) return made;
  const users = `/api/v1/admin/accounts/${encodeURIComponent(account)}/users`;
  const added = await root.request("POST", users, UserKeyReply, { body: { user_id: user, role: "user" } });
  if (added.ok) return { key: added.result.user_key, said: `made user ${user} in account ${account}` };
  if (!exists(added)) return added;
  const list = await root.request("GET", users, UsersReply, { query: { name: user } });
  if (!list.ok) return list;
  const known = list.result.find((u) => u.user_id === user)?.api_key;
  if (known) return { key: known, said: `reused the key of user ${user} in account ${account}` };
  // The server keeps only hashes of keys: the one way to a key is a new one.
  const fresh = await root.request("POST", `${users}/${encodeURIComponent(user)}/key`, UserKeyReply, {
    body: {},
  });
  if (!fresh.ok) return fresh;
  return {
    key: fresh.result.user_key,
    said: `made a new key for user ${user} in account ${account} (the server keeps no readable keys)`,
    after: "The user's previous key no longer works.",
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

/** Asks the server about `given` before it is saved; a refused key, or one nobody can check, stops install. */
export async function keyToSave(
  ctx: Context,
  given: { apiKey: string; from: string },
  target: { url: string; account?: string; user?: string; dryRun: boolean },
): Promise<KeyOutcome> {
  const account = target.account || DEFAULT_ID;
  const user = target.user || DEFAULT_ID;
  const rootByFile = given.apiKey === await rootKeyOfOvConf(ctx);
  const client = createClient({
    baseUrl: target.url,
    apiKey: given.apiKey,
    account: target.account,
    user: target.user,
    userAgent: USER_AGENT,
    timeoutMs: 5000,
    fetch: ctx.fetch,
  });
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
  const would = `${rootKey}; install would make or reuse ${named} with it and save that key.`;
  if (target.dryRun) return { ok: true, said: [would] };
  const made = health.ok ? await makeUserKey(client, account, user) : health;
  if ("key" in made) {
    const said = `${rootKey}; with it, install ${made.said} and saves that user's key instead.`;
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
