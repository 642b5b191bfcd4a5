/** runtime/paths.ts never yields a relative path (issue #11 finding 8), and loadConfig without a home reads nothing. */

import fc from "fast-check";
import { assertEquals, assertMatch, assertThrows, assertTrue } from "../tests/support/assert.ts";
import {
  type Env,
  expandHome,
  hookStateDir,
  isAbsolutePath,
  kimiHome,
  NoHomeError,
  noHomeReason,
  openVikingHome,
  pendingDir,
  sharedStateDir,
} from "./paths.ts";
import { credentialFilePaths, loadConfig } from "../openviking/config.ts";
import { tempDir } from "../tests/support/temp.ts";

const LOCATIONS: [string, (env: Env) => string][] = [
  ["openVikingHome", openVikingHome],
  ["kimiHome", (env) => kimiHome(env)],
  ["hookStateDir", hookStateDir],
  ["pendingDir", pendingDir],
  ["sharedStateDir", sharedStateDir],
];

Deno.test("paths: without HOME (or with a relative one) every location is NoHomeError, never a relative path", () => {
  for (const env of [{}, { HOME: "" }, { HOME: "relative/home" }, { HOME: "~" }, { USERPROFILE: "x" }]) {
    for (const [name, where] of LOCATIONS) {
      assertThrows(() => where(env), NoHomeError, undefined, `${name} ${JSON.stringify(env)}`);
    }
    assertMatch(noHomeReason(env), /HOME is not set/);
    assertThrows(() => expandHome("~/x", env), NoHomeError);
  }
});

Deno.test("paths: absolute overrides work without HOME; relative ones are ignored", () => {
  const env = {
    OPENVIKING_HOME: "/ov",
    KIMI_CODE_HOME: "/kimi",
    OPENVIKING_PENDING_DIR: "queue",
    OPENVIKING_HOOK_STATE_DIR: "/state",
  };
  assertEquals(
    LOCATIONS.map(([, where]) => where(env)),
    ["/ov", "/kimi", "/state/kimicode", "/ov/pending", "/ov/state"],
  );
  assertEquals(noHomeReason(env), "");
  assertThrows(() => pendingDir({ OPENVIKING_PENDING_DIR: "queue" }), NoHomeError);
  assertEquals(pendingDir({ HOME: "/h", OPENVIKING_PENDING_DIR: "queue" }), "/h/.openviking/pending");
  assertEquals(hookStateDir({ HOME: "/h", OPENVIKING_HOOK_STATE_DIR: "~/s" }), "/h/s/kimicode");
  assertEquals(kimiHome({ HOME: "/h" }), "/h/.kimi-code");
  assertEquals(credentialFilePaths({}), { cli: "", ov: "" }, "no home: no file, not a relative one");
  assertEquals(credentialFilePaths({ OPENVIKING_CLI_CONFIG_FILE: "/etc/ovcli.conf", HOME: "rel" }), {
    cli: "/etc/ovcli.conf",
    ov: "",
  });
});

Deno.test("paths (property): any environment gives an absolute path or NoHomeError, for every location", () => {
  const value = fc.oneof(
    fc.constant(undefined),
    fc.constantFrom("", "~", "~/x", "/abs", "/", "rel", "./rel", "../up", "C:\\Users\\u", ".openviking"),
    fc.string({ maxLength: 12 }),
  );
  const envArb = fc.record({
    HOME: value,
    USERPROFILE: value,
    OPENVIKING_HOME: value,
    OPENVIKING_HOOK_STATE_DIR: value,
    OPENVIKING_PENDING_DIR: value,
    OPENVIKING_STATE_DIR: value,
    KIMI_CODE_HOME: value,
  });
  fc.assert(
    fc.property(envArb, (env) => {
      for (const [name, where] of LOCATIONS) {
        try {
          const path = where(env);
          assertTrue(isAbsolutePath(path), `${name} gave ${JSON.stringify(path)} for ${JSON.stringify(env)}`);
        } catch (error) {
          assertTrue(error instanceof NoHomeError, `${name}: ${(error as Error).message}`);
        }
      }
    }),
    { numRuns: 2000 },
  );
});

Deno.test("loadConfig without a home reads no file: not the cwd's .openviking/, not a workspace file", async () => {
  await using dir = await tempDir();
  const ws = `${dir.path}/repo`;
  await Deno.mkdir(`${ws}/.openviking`, { recursive: true });
  for (const name of ["ovcli.conf", "ov.conf", "config.json", "config.local.json"]) {
    await Deno.writeTextFile(
      `${ws}/.openviking/${name}`,
      JSON.stringify({
        url: "http://evil:1",
        api_key: "evil",
        recallLimit: 3,
        server: { url: "http://evil:2" },
      }),
    );
  }
  const cwd = Deno.cwd();
  Deno.chdir(ws); // even with the process in the repository, nothing resolves against it
  try {
    const { config, warnings } = await loadConfig({ OPENVIKING_URL: "http://user:1933" }, ws);
    assertEquals(
      [config.baseUrl, config.apiKey, config.recallLimit, config.debugLogPath],
      ["http://user:1933", "", 10, ""],
    );
    assertEquals(warnings, []);
    const bare = await loadConfig({}, ws);
    assertEquals([bare.config.baseUrl, bare.config.apiKey], ["http://127.0.0.1:1933", ""]);
  } finally {
    Deno.chdir(cwd);
  }
});

Deno.test("loadConfig with a home: workspace files set knobs only — never a URL, a key, an identity or the log path", async () => {
  await using dir = await tempDir();
  const ws = `${dir.path}/repo`;
  await Deno.mkdir(`${ws}/.openviking`, { recursive: true });
  const hostile = {
    url: "http://evil:1",
    baseUrl: "http://evil:1",
    mcpUrl: "http://evil:1/mcp",
    api_key: "evil",
    apiKey: "evil",
    account: "evil",
    user: "evil",
    peerId: "evil",
    debugLogPath: "/etc/evil.log",
    recallLimit: 3,
  };
  await Deno.writeTextFile(`${ws}/.openviking/config.json`, JSON.stringify(hostile));
  await Deno.writeTextFile(`${ws}/.openviking/config.local.json`, JSON.stringify(hostile));
  await Deno.writeTextFile(
    `${ws}/.openviking/ovcli.conf`,
    JSON.stringify({ url: "http://evil:3", api_key: "e" }),
  );
  await Deno.writeTextFile(`${ws}/.openviking/ov.conf`, JSON.stringify({ server: { url: "http://evil:4" } }));
  const { config, warnings } = await loadConfig({ HOME: `${dir.path}/home` }, ws);
  assertEquals(
    [config.baseUrl, config.mcpUrl, config.apiKey, config.account, config.user, config.peerId],
    ["http://127.0.0.1:1933", "http://127.0.0.1:1933/mcp", "", "", "", ""],
  );
  assertEquals(config.debugLogPath, `${dir.path}/home/.openviking/logs/kimicode-hooks.log`);
  assertEquals(config.recallLimit, 3, "knobs still apply");
  assertMatch(
    warnings.join("\n"),
    /"debugLogPath": "\/etc\/evil\.log" is ignored: a workspace file may not set it/,
  );
});

Deno.test("loadConfig: a relative debug log path or override is ignored with a warning", async () => {
  const { config, warnings } = await loadConfig({
    HOME: "/h",
    OPENVIKING_DEBUG_LOG: "logs/x.log",
    OPENVIKING_CLI_CONFIG_FILE: "ovcli.conf",
  });
  assertEquals([config.debugLogPath, config.cliConfigPath], [
    "/h/.openviking/logs/kimicode-hooks.log",
    "/h/.openviking/ovcli.conf",
  ]);
  assertMatch(warnings.join("\n"), /OPENVIKING_CLI_CONFIG_FILE=ovcli.conf is not an absolute path/);
  assertMatch(warnings.join("\n"), /debug log path "logs\/x.log" is not an absolute path/);
});
