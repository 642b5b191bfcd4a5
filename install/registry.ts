/**
 * Pure planning of our record in Kimi's plugin registry `$KIMI_CODE_HOME/plugins/installed.json`
 * (`{version: 1, plugins: [...]}`), the way Kimi's own `/plugins install` writes it: other records and every
 * other field stay as they are; re-install keeps `enabled`, `installedAt` and `capabilities`.
 */

import * as z from "zod/mini";
import { PLUGIN_ID } from "./spec.ts";
import { formatJson, jsonStyle, parseJson } from "./json-file.ts";

const RecordSchema = z.looseObject({ id: z.string(), root: z.optional(z.string()) });
const RegistrySchema = z.looseObject({ version: z.literal(1), plugins: z.array(RecordSchema) });

/** A parsed registry. */
export type Registry = z.infer<typeof RegistrySchema>;

/** A registry record. */
export type RegistryRecord = z.infer<typeof RecordSchema>;

/** Parses registry text; `undefined` text is an empty registry. */
export function parseRegistry(
  text: string | undefined,
): { ok: true; value: Registry } | { ok: false; error: string } {
  if (text === undefined || text.trim() === "") return { ok: true, value: { version: 1, plugins: [] } };
  const parsed = parseJson(text);
  const checked = parsed.ok ? RegistrySchema.safeParse(parsed.value) : undefined;
  if (!checked?.success) {
    return {
      ok: false,
      error: `plugins/installed.json is not a Kimi plugin registry ({"version":1,"plugins":[…]}${
        parsed.ok ? "" : `: ${parsed.error}`
      }). Kimi Code cannot read it either: fix or delete it (a copy may be in installed.json.bak), then run again; nothing was changed.`,
    };
  }
  return { ok: true, value: checked.data };
}

/** Our record in a registry, if any. */
export function findRecord(registry: Registry, id = PLUGIN_ID): RegistryRecord | undefined {
  return registry.plugins.find((p) => p.id.toLowerCase() === id);
}

/** A planned registry change. */
export type RegistryPlan =
  | { ok: true; after: string | undefined; changed: boolean; previous: RegistryRecord | undefined }
  | { ok: false; error: string };

/** Plans the upsert of our record pointing at `root`. */
export function planRegistryInstall(
  current: string | undefined,
  record: { root: string; originalSource: string },
  now: Date,
): RegistryPlan {
  const parsed = parseRegistry(current);
  if (!parsed.ok) return parsed;
  const previous = findRecord(parsed.value);
  const stamp = now.toISOString();
  const next = {
    ...(previous ?? {}),
    id: PLUGIN_ID,
    root: record.root,
    source: "local-path",
    enabled: typeof previous?.enabled === "boolean" ? previous.enabled : true,
    installedAt: typeof previous?.installedAt === "string" ? previous.installedAt : stamp,
    updatedAt: stamp,
    originalSource: record.originalSource,
  };
  const plugins = previous
    ? parsed.value.plugins.map((p) => (p === previous ? next : p))
    : [...parsed.value.plugins, next];
  const after = formatJson({ ...parsed.value, plugins }, jsonStyle(current));
  return { ok: true, after, changed: after !== current, previous };
}

/** Plans the removal of our record (the registry file goes away when nothing else is left in it). */
export function planRegistryUninstall(current: string | undefined): RegistryPlan {
  if (current === undefined) return { ok: true, after: undefined, changed: false, previous: undefined };
  const parsed = parseRegistry(current);
  if (!parsed.ok) return parsed;
  const previous = findRecord(parsed.value);
  if (!previous) return { ok: true, after: current, changed: false, previous };
  const plugins = parsed.value.plugins.filter((p) => p !== previous);
  const rest = { ...parsed.value, plugins };
  const empty = plugins.length === 0 && Object.keys(rest).length === 2;
  return {
    ok: true,
    after: empty ? undefined : formatJson(rest, jsonStyle(current)),
    changed: true,
    previous,
  };
}

/** Plans `enabled: false` on the `openviking-memory` record (OpenViking's own plugin, replaced with --yes). */
export function planRegistryDisable(current: string | undefined, now: Date): RegistryPlan {
  const parsed = parseRegistry(current);
  if (!parsed.ok) return parsed;
  const previous = findRecord(parsed.value);
  if (!previous || previous.enabled === false) return { ok: true, after: current, changed: false, previous };
  const plugins = parsed.value.plugins.map((p) =>
    p === previous ? { ...p, enabled: false, updatedAt: now.toISOString() } : p
  );
  return {
    ok: true,
    after: formatJson({ ...parsed.value, plugins }, jsonStyle(current)),
    changed: true,
    previous,
  };
}
