/**
 * Fuzzing the install planners with random and mutated user documents — config.toml (generated TOML, then
 * edited: characters, lines, stray marker lines, an older block), mcp.json, plugins/installed.json and
 * ovcli.conf: each planner either produces a result that parses or refuses with a message; it never throws.
 * mcp.json documents in every layout: uninstall takes out only our member and refuses exactly what JSON.parse
 * refuses. The same documents through `install` / `uninstall` end to end in a Kimi home: exit 0 with every
 * written file parsing, or exit 1 with every file byte-identical.
 */

import fc from "fast-check";
import { assertEquals, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { tomlDocument } from "../install/toml_arbitrary.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { parseRegistry, planMcpUninstall } from "../../install/json-files.ts";
import { planRegistryInstall, planRegistryUninstall } from "../../install/json-files.ts";
import { planOvcli } from "../../install/ovcli.ts";
import { BLOCK_BEGIN, BLOCK_END, MCP_SERVER_NAME, PLUGIN_ID } from "../../install/spec.ts";
import { parseToml, planConfigUninstall } from "../../install/toml-block.ts";
import { isRecord as isObject } from "../../lib/parsed.ts";
import { withOlderBlock } from "../install/config_mode_home.ts";
import { fileText, mutated, nastyString, params } from "./arbitraries.ts";
import { mcpDocument } from "../install/json_arbitrary.ts";
import { deletionOf, parseLoose } from "../install/text_diff.ts";
import { installSandbox, opts } from "../install/helpers.ts";

const NOW = new Date("2026-11-30T12:00:00.000Z");

const tomlPieces = fc.oneof(
  nastyString,
  fc.constantFrom(`\n${BLOCK_BEGIN}\n`, `\n${BLOCK_END}\n`, "\nhooks = 1\n", "\n[hooks]\n", '"""', "\r"),
  fc.constantFrom("node kimicode-hook.mjs", "/x/openviking-kimi hook stop").map((c) =>
    `\n[[hooks]]\nevent = "Stop"\ncommand = "${c}"\n`
  ),
);

/** config.toml as users have it: generated, edited, or already holding our (older) block. */
const configText = fileText(
  tomlDocument(),
  mutated(tomlDocument(), tomlPieces),
  tomlDocument().map((d) => withOlderBlock(d, "/old/openviking-kimi")).chain((d) =>
    fc.oneof(fc.constant(d), mutated(fc.constant(d), tomlPieces))
  ),
);

const mcpText = fileText(
  '{\n\t"mcpServers": {\n\t\t"other": {"command": "x", "args": ["y"]}\n\t},\n\t"z": 1\n}\n',
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
    .map((servers) => JSON.stringify({ mcpServers: servers }, null, 2)),
  fc.constantFrom({ command: "node", args: ["/x/mcp-proxy.mjs"] }, {
    command: "/o/openviking-kimi",
    args: ["mcp"],
  })
    .map((openviking) => JSON.stringify({ mcpServers: { openviking } })),
  fc.constantFrom("\ufeff{}", ""),
);

const plugins = [{ id: "other", root: "/p/other", enabled: true }, {
  id: PLUGIN_ID,
  root: "/p/ov",
  enabled: false,
}];
const registryText = fileText(
  JSON.stringify({ version: 1, plugins }, null, 2),
  fc.array(
    fc.record({ id: fc.oneof(fc.constant(PLUGIN_ID), nastyString), root: nastyString }, { requiredKeys: [] }),
  )
    .map((plugins) => JSON.stringify({ version: 1, plugins })),
);

const parsesAsJsonObject = (text: string) => {
  try {
    return isObject(JSON.parse(text.replace(/^\ufeff/, "")));
  } catch {
    return false;
  }
};

/** A refusal says why; else what a planner writes parses (`parses`), when it writes. */
function parsesOrRefuses(
  plan: { ok: true; after?: string; changed?: boolean } | { ok: false; error: string },
  parses: (text: string) => boolean,
  what: string,
): void {
  if (!plan.ok) assertTrue(plan.error.length > 0, `a refusal of ${what} says why`);
  else if (plan.changed !== false && plan.after !== undefined) {
    assertTrue(parses(plan.after), `${what} parses`);
  }
}

Deno.test("fuzz: config.toml, installed.json and ovcli.conf planners — a result that parses, or a refusal", () => {
  const creds = fc.record(
    { url: nastyString, apiKey: nastyString, account: nastyString, user: nastyString },
    {
      requiredKeys: [],
    },
  );
  const ovcli = fileText('{"url":"http://h:1","api_key":"k"}');
  fc.assert(
    fc.property(configText, registryText, ovcli, creds, (text, registry, conf, creds) => {
      const tomlParses = (t: string) => parseToml(t).ok;
      parsesOrRefuses(planConfigUninstall(text), tomlParses, "config.toml after uninstall");

      const registryParses = (t: string) => parseRegistry(t).ok;
      const ri = planRegistryInstall(registry, { root: "/k/r", originalSource: "/src" }, NOW);
      parsesOrRefuses(ri, registryParses, "installed.json");
      parsesOrRefuses(planRegistryUninstall(registry), registryParses, "installed.json after uninstall");
      const reg = ri.ok ? parseRegistry(ri.after) : undefined;
      if (reg) assertTrue(reg.ok && reg.value.plugins.some((p) => p.id === PLUGIN_ID && p.root === "/k/r"));

      const ov = planOvcli(conf, creds, "/h/.openviking/ovcli.conf");
      parsesOrRefuses(ov, parsesAsJsonObject, "ovcli.conf");
      if (ov.ok && ov.changed && (creds.apiKey ?? "").length >= 12) {
        const said = ov.summary.filter((l) => l.startsWith("api_key")).join(" ");
        assertTrue(!said.includes(creds.apiKey!), "the key is not shown");
      }
    }),
    params(1500),
  );
});

Deno.test("fuzz: mcp.json in any layout — uninstall takes out only our member, one deletion; anyone else's stays", () => {
  fc.assert(
    fc.property(mcpDocument, (doc) => {
      const parsed = parseLoose(doc.text) as Record<string, unknown>;
      const un = planMcpUninstall(doc.text);
      assertTrue(un.ok);
      if (!un.ok) return;
      if (doc.openviking !== "ours" && doc.openviking !== "old-ours") {
        assertEquals(un.after, doc.text);
        return;
      }
      const rest = { ...(parsed.mcpServers as Record<string, unknown>) };
      delete rest[MCP_SERVER_NAME];
      if (un.after === undefined) {
        assertEquals(
          { ...parsed, mcpServers: rest },
          { mcpServers: {} },
          "only an empty mcpServers was left",
        );
      } else {
        assertTrue(deletionOf(doc.text, un.after) !== undefined, "one deletion");
        assertEquals(parseLoose(un.after), { ...parsed, mcpServers: rest });
      }
    }),
    params(1500),
  );
});

Deno.test("fuzz: mcp.json uninstall refuses exactly what JSON.parse refuses, and never throws", () => {
  const text = fc.oneof(
    mcpDocument.map((d) => d.text),
    mutated(
      mcpDocument.map((d) => d.text),
      fc.constantFrom(",", "}", "{", '"', "\\", ":", "]", " ", "\r", "1"),
    ),
  );
  fc.assert(
    fc.property(text, (t) => {
      let valid = true;
      try {
        JSON.parse(t.replace(/^\ufeff/, ""));
      } catch {
        valid = false;
      }
      const uninstall = planMcpUninstall(t);
      if (!valid && t.trim() !== "") {
        assertEquals(uninstall.ok, false, JSON.stringify(t));
        return;
      }
      if (!uninstall.ok) assertTrue(/mcp\.json/.test(uninstall.error));
      else if (uninstall && uninstall.changed && uninstall.after !== undefined) {
        assertTrue(parsesAsJsonObject(uninstall.after));
      }
    }),
    params(1500),
  );
});

Deno.test({
  name:
    "fuzz: install / uninstall in a Kimi home with random files — exit 0 and files that parse, or exit 1 and no change",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await using dir = await tempDir("ovk-fuzz-");
    let n = 0;
    const codes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        configText,
        mcpText,
        registryText,
        fc.constantFrom("install", "uninstall"),
        fc.boolean(),
        async (rawConfig, rawMcp, rawRegistry, command, yes) => {
          // What a file holds once written: lone surrogates become U+FFFD.
          const [config, mcp, registry] = [rawConfig, rawMcp, rawRegistry].map((t) =>
            t === undefined ? undefined : new TextDecoder().decode(new TextEncoder().encode(t))
          );
          const root = `${dir.path}/${++n}`;
          const t = await installSandbox(root);
          const kimi = t.kimi;
          await Deno.mkdir(`${kimi}/plugins`);
          const files: Record<string, string | undefined> = {
            [`${kimi}/config.toml`]: config,
            [`${kimi}/mcp.json`]: mcp,
            [`${kimi}/plugins/installed.json`]: registry,
          };
          for (const [path, text] of Object.entries(files)) {
            if (text !== undefined) await Deno.writeTextFile(path, text);
          }
          const code = await (command === "install" ? runInstall : runUninstall)(
            t.ctx(),
            opts({ yes }),
          );
          const lines = t.lines;
          const kind = `${command} → ${code}`;
          codes.set(kind, (codes.get(kind) ?? 0) + 1);
          const now = async (p: string) => await Deno.readTextFile(p).catch(() => undefined);
          if (code === 1) {
            assertTrue(lines.some((l) => l.startsWith("ERR ")), "a refusal says why");
            for (const [path, text] of Object.entries(files)) {
              assertEquals(await now(path), text, `${path} untouched`);
            }
          } else {
            assertEquals(code, 0, lines.join("\n"));
            const cfg = await now(`${kimi}/config.toml`);
            if (cfg !== undefined && cfg !== config) assertTrue(parseToml(cfg).ok, "config.toml parses");
            const m = await now(`${kimi}/mcp.json`);
            if (m !== undefined && m !== mcp) assertTrue(parsesAsJsonObject(m), "mcp.json parses");
            const r = await now(`${kimi}/plugins/installed.json`);
            if (r !== undefined && r !== registry) assertTrue(parseRegistry(r).ok, "installed.json parses");
            for (const [path, text] of Object.entries(files)) {
              if (text !== undefined && (await now(path)) !== text) {
                assertEquals(await now(`${path}.bak`), text, `${path}.bak keeps the previous bytes`);
              }
            }
          }
          await Deno.remove(root, { recursive: true });
        },
      ),
      params(150),
    );
    console.log(`install fuzz: ${n} Kimi homes ${JSON.stringify(Object.fromEntries(codes))}`);
  },
});
