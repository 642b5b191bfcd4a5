/**
 * Saving connection settings to `~/.openviking/ovcli.conf` the way OpenViking's other installers do: merge
 * into the existing JSON (unknown fields kept), `""` deletes a field, mode 0600, a timestamped backup.
 * The API key is never printed: `maskSecrets` hides it in diffs and summaries.
 */

import { formatJson, jsonStyle, parseJson } from "./json-file.ts";
import { isRecord } from "../runtime/parsed.ts";

/** Connection settings given on the command line (`undefined` = not given, `""` = delete). */
export interface CredentialArgs {
  url?: string;
  apiKey?: string;
  /** Where the key came from (stdin, the environment, the terminal), said next to "not shown". */
  apiKeyFrom?: string;
  account?: string;
  user?: string;
}

/**
 * A planned ovcli.conf change. `summary` says what the file holds afterwards (`url = …`, `api_key set (not
 * shown)`, `account deleted`), `steps` what will be done (`set url to …`, `delete account`), for dry runs.
 */
export type OvcliPlan =
  | { ok: true; after: string | undefined; changed: boolean; summary: string[]; steps: string[] }
  | { ok: false; error: string };

/** One setting written or deleted. */
interface Setting {
  name: string;
  /** The value shown; undefined = deleted. */
  shown?: string;
  note?: string;
}

/** What the file holds afterwards, per setting. */
function done(s: Setting): string {
  return s.shown === undefined
    ? `${s.name} deleted${s.note ? ` (${s.note})` : ""}`
    : `${s.name} = ${s.shown}`;
}

/** What will be done, per setting. */
function todo(s: Setting): string {
  if (s.shown === undefined) return `delete ${s.name}${s.note ? ` (${s.note})` : ""}`;
  return s.shown.startsWith("(") ? `set ${s.name} ${s.shown}` : `set ${s.name} to ${s.shown}`;
}

/** Whether any setting was given. */
function hasCredentialArgs(args: CredentialArgs): boolean {
  return [args.url, args.apiKey, args.account, args.user].some((v) => v !== undefined);
}

/** Sets (or with "" deletes) the server URL in `doc`; says what it did, or why the URL is refused. */
function mergeUrl(doc: Record<string, unknown>, given: string, settings: Setting[]): string | undefined {
  const url = given.trim().replace(/\/+$/, "");
  if (url === "") {
    delete doc.url;
    settings.push({ name: "url", note: "the default http://127.0.0.1:1933 applies" });
    return undefined;
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !["http:", "https:"].includes(parsed.protocol)) {
    return `--url "${
      given.replace(/\/\/[^/@]*@/, "//…@")
    }" is not an http(s) URL, e.g. http://127.0.0.1:1933`;
  }
  if (parsed.username || parsed.password) {
    return "--url carries a user name or password, which would be saved and shown as part of the address: " +
      "give the address alone and the key with --api-key-stdin (or OPENVIKING_API_KEY)";
  }
  doc.url = url;
  settings.push({ name: "url", shown: url });
  return undefined;
}

/** Sets (or with "" deletes) the key, account and user in `doc` (an alias spelling goes); says what it did. */
function mergeIdentity(doc: Record<string, unknown>, args: CredentialArgs, settings: Setting[]): void {
  if (args.apiKey !== undefined) {
    if (args.apiKey === "") {
      delete doc.api_key;
      settings.push({ name: "api_key" });
    } else {
      doc.api_key = args.apiKey;
      settings.push({
        name: "api_key",
        shown: `(not shown${args.apiKeyFrom ? `; from ${args.apiKeyFrom}` : ""})`,
      });
    }
  }
  for (
    const [name, value, alias] of [["account", args.account, "account_id"], ["user", args.user, "user_id"]]
  ) {
    if (value === undefined) continue;
    if (value === "") {
      delete doc[name as string];
      delete doc[alias as string];
      settings.push({ name: name as string });
    } else {
      doc[name as string] = value;
      if (alias && alias in doc) delete doc[alias as string];
      settings.push({ name: name as string, shown: value });
    }
  }
}

/** Plans the merge of `args` into ovcli.conf's text. */
export function planOvcli(current: string | undefined, args: CredentialArgs, path: string): OvcliPlan {
  if (!hasCredentialArgs(args)) return { ok: true, after: current, changed: false, summary: [], steps: [] };
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
  mergeIdentity(doc, args, settings);
  const after = formatJson(doc, jsonStyle(current));
  return {
    ok: true,
    after,
    changed: after !== current,
    summary: settings.map(done),
    steps: settings.map(todo),
  };
}

/** Replaces the values of secret-looking JSON fields (`api_key`, `*token*`, `*secret*`) with asterisks. */
export function maskSecrets(text: string): string {
  return text.replace(
    /("(?:[A-Za-z_]*(?:api_?key|token|secret|password)[A-Za-z_]*)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi,
    '$1"********"',
  );
}
