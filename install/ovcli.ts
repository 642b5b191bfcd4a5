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
  account?: string;
  user?: string;
}

/** A planned ovcli.conf change. */
export type OvcliPlan =
  | { ok: true; after: string | undefined; changed: boolean; summary: string[] }
  | { ok: false; error: string };

/** Whether any setting was given. */
function hasCredentialArgs(args: CredentialArgs): boolean {
  return [args.url, args.apiKey, args.account, args.user].some((v) => v !== undefined);
}

/** Sets (or with "" deletes) the server URL in `doc`; says what it did, or why the URL is refused. */
function mergeUrl(doc: Record<string, unknown>, given: string, summary: string[]): string | undefined {
  const url = given.trim().replace(/\/+$/, "");
  if (url === "") {
    delete doc.url;
    summary.push("url removed (the default http://127.0.0.1:1933 applies)");
    return undefined;
  }
  let ok = false;
  try {
    ok = ["http:", "https:"].includes(new URL(url).protocol);
  } catch {
    ok = false;
  }
  if (!ok) return `--url "${given}" is not an http(s) URL, e.g. http://127.0.0.1:1933`;
  doc.url = url;
  summary.push(`url = ${url}`);
  return undefined;
}

/** Sets (or with "" deletes) the key, account and user in `doc` (an alias spelling goes); says what it did. */
function mergeIdentity(doc: Record<string, unknown>, args: CredentialArgs, summary: string[]): void {
  if (args.apiKey !== undefined) {
    if (args.apiKey === "") {
      delete doc.api_key;
      summary.push("api_key removed");
    } else {
      doc.api_key = args.apiKey;
      summary.push("api_key saved (not shown)");
    }
  }
  for (
    const [name, value, alias] of [["account", args.account, "account_id"], ["user", args.user, "user_id"]]
  ) {
    if (value === undefined) continue;
    if (value === "") {
      delete doc[name as string];
      delete doc[alias as string];
      summary.push(`${name} removed`);
    } else {
      doc[name as string] = value;
      if (alias && alias in doc) delete doc[alias as string];
      summary.push(`${name} = ${value}`);
    }
  }
}

/** Plans the merge of `args` into ovcli.conf's text. */
export function planOvcli(current: string | undefined, args: CredentialArgs, path: string): OvcliPlan {
  if (!hasCredentialArgs(args)) return { ok: true, after: current, changed: false, summary: [] };
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
  const summary: string[] = [];
  const refused = args.url !== undefined ? mergeUrl(doc, args.url, summary) : undefined;
  if (refused) return { ok: false, error: refused };
  mergeIdentity(doc, args, summary);
  const after = formatJson(doc, jsonStyle(current));
  return { ok: true, after, changed: after !== current, summary };
}

/** Replaces the values of secret-looking JSON fields (`api_key`, `*token*`, `*secret*`) with asterisks. */
export function maskSecrets(text: string): string {
  return text.replace(
    /("(?:[A-Za-z_]*(?:api_?key|token|secret|password)[A-Za-z_]*)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi,
    '$1"********"',
  );
}
