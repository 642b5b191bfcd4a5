/** lib/paths.ts never yields a relative path: a location without a home is NoHomeError; a relative override is ignored. */

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
import { credentialFilePaths } from "../openviking/config.ts";

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
  const want = ["/ov", "/kimi", "/state/kimicode", "/ov/pending", "/ov/state"];
  assertEquals(LOCATIONS.map(([, where]) => where(env)), want);
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
  const names = "HOME USERPROFILE OPENVIKING_HOME OPENVIKING_HOOK_STATE_DIR OPENVIKING_PENDING_DIR " +
    "OPENVIKING_STATE_DIR KIMI_CODE_HOME";
  const envArb = fc.record(Object.fromEntries(names.split(" ").map((n) => [n, value])));
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
