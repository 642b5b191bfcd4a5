/**
 * Fuzzing configuration: ovcli.conf, ov.conf and the workspace files as random bytes, random JSON and mutated
 * real documents, plus random values in every knob's environment variable, through `loadConfig`.
 */

import fc from "fast-check";
import { assertEquals, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { type Config, DEFAULT_BASE_URL, KNOBS, loadConfig } from "../../openviking/config.ts";
import { fileText, nastyString, params, wrongValue } from "./arbitraries.ts";

const KNOB_NAMES = Object.keys(KNOBS) as (keyof typeof KNOBS)[];

const OVCLI = JSON.stringify(
  {
    url: "http://127.0.0.1:1933",
    api_key: "fuzz-key-0123456789",
    account: "acct",
    user: "u",
    plugin: { kimicode: { recallDigestLimit: 5, redact: "on" }, timeoutMs: 2000 },
  },
  null,
  2,
);
const OVCONF = JSON.stringify({
  server: { host: "0.0.0.0", port: 1933, root_api_key: "root" },
  kimicode: { apiKey: "k", peerId: "p" },
});

/** A config file's text: as found (fileText), or an object with random knobs. */
const configFile = (real: string) =>
  fileText(
    real,
    fc.dictionary(fc.constantFrom(...KNOB_NAMES, "url", "api_key", "plugin"), wrongValue, { maxKeys: 6 })
      .map((k) => JSON.stringify({ ...k, plugin: { kimicode: k } })),
  );

/** The invariants of any resolved config. */
function checkConfig(config: Config, warnings: string[]): void {
  const url = new URL(config.baseUrl);
  assertTrue(url.protocol === "http:" || url.protocol === "https:", `http(s) URL: ${config.baseUrl}`);
  assertTrue(!config.baseUrl.endsWith("/"), "no trailing slash");
  assertTrue(["http:", "https:"].includes(new URL(config.mcpUrl).protocol), "http(s) MCP URL");
  for (const name of KNOB_NAMES) {
    const knob = KNOBS[name];
    const value = config[name];
    const parses = () => {
      try {
        return knob.parse(value as never) !== undefined;
      } catch {
        return false;
      }
    };
    const ok = value === knob.default || (value !== undefined && parses()) || name === "debugLogPath";
    assertTrue(ok, `knob ${name} = ${JSON.stringify(value)} is within its schema`);
  }
  assertTrue(typeof config.debugLogPath === "string" && config.debugLogPath.length > 0);
  for (const w of warnings) assertTrue(typeof w === "string" && w.trim() !== "", "a warning says something");
}

Deno.test("fuzz: loadConfig on random credential files, workspace files and environment never throws", async () => {
  await using dir = await tempDir("ovk-fuzz-");
  const home = `${dir.path}/home`;
  const ws = `${dir.path}/ws`;
  await Deno.mkdir(`${home}/.openviking`, { recursive: true });
  await Deno.mkdir(`${ws}/.openviking`, { recursive: true });
  const write = async (path: string, text: string | undefined) => {
    await Deno.remove(path, { recursive: true }).catch(() => {});
    if (text !== undefined) await Deno.writeTextFile(path, text);
  };
  await fc.assert(
    fc.asyncProperty(
      configFile(OVCLI),
      configFile(OVCONF),
      configFile('{"captureWaitMs": 3000}'),
      configFile('{"autoRecall": false}'),
      fc.dictionary(fc.constantFrom(...KNOB_NAMES.map((k) => KNOBS[k].env)), nastyString, { maxKeys: 5 }),
      fc.record({
        OPENVIKING_URL: fc.oneof(nastyString, fc.constantFrom("http://127.0.0.1:9", "https://x.example/")),
        OPENVIKING_MCP_URL: nastyString,
        OPENVIKING_CONFIG_FILE: fc.constantFrom(
          `${home}/.openviking/ov.conf`,
          `${home}/.openviking`,
          "~/nope",
        ),
        OPENVIKING_API_KEY: nastyString,
      }, { requiredKeys: [] }),
      async (ovcli, ovconf, wsConfig, wsLocal, knobEnv, credEnv) => {
        await write(`${home}/.openviking/ovcli.conf`, ovcli);
        await write(`${home}/.openviking/ov.conf`, ovconf);
        await write(`${ws}/.openviking/config.json`, wsConfig);
        await write(`${ws}/.openviking/config.local.json`, wsLocal);
        const env = { HOME: home, ...knobEnv, ...credEnv };
        const { config, warnings } = await loadConfig(env, ws);
        checkConfig(config, warnings);
        if (ovcli === undefined && ovconf === undefined && !credEnv.OPENVIKING_URL) {
          assertEquals(config.baseUrl, DEFAULT_BASE_URL);
        }
      },
    ),
    params(300),
  );
});
