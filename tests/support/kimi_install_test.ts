/**
 * Tests of tests/support/kimi.ts's version matrix and install cache: the release list drives
 * `KIMI_E2E_VERSIONS`, and test files starting at once install a version once (a stub `npm` counts the
 * installs; no registry is contacted).
 */

import { assertEquals, assertThrows } from "./assert.ts";
import { KIMI_RELEASES, KIMI_VERSIONS, kimiE2eVersions, nodePackageName } from "./kimi.ts";
import { tempDir } from "./temp.ts";

Deno.test("KIMI_E2E_VERSIONS: unset → newest and oldest; all → every release, newest first; a list → those", () => {
  assertEquals([...KIMI_VERSIONS], [KIMI_RELEASES.at(-1), KIMI_RELEASES[0]]);
  assertEquals(kimiE2eVersions(""), ["2.1.0", "0.41.0"]);
  assertEquals(kimiE2eVersions("all"), ["2.1.0", "2.0.2", "0.43.1", "0.43.0", "0.42.0", "0.41.0"]);
  assertEquals(kimiE2eVersions(" 0.43.1, 2.0.2,0.43.1 "), ["0.43.1", "2.0.2"]);
  assertThrows(() => kimiE2eVersions("latest"), Error, "KIMI_E2E_VERSIONS: latest is not a version");
});

/** A stub `npm install --prefix P …` that lays out a Kimi install, slowly, and counts its runs. */
function stubNpm(counter: string): string {
  const node = `#!/bin/sh\necho v24.0.0\n`;
  return `#!/bin/sh
prefix=""
while [ $# -gt 0 ]; do [ "$1" = "--prefix" ] && prefix="$2"; shift; done
echo run >> '${counter}'
sleep 1
mkdir -p "$prefix/node_modules/@moonshot-ai/kimi-code/dist" "$prefix/node_modules/${nodePackageName()}/bin"
echo 'console.log(1)' > "$prefix/node_modules/@moonshot-ai/kimi-code/dist/main.mjs"
printf '%s' '${node}' > "$prefix/node_modules/${nodePackageName()}/bin/node"
chmod +x "$prefix/node_modules/${nodePackageName()}/bin/node"
`;
}

Deno.test({
  name: "installKimi: four processes asking for one version at once run npm once; later calls reuse it",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using dir = await tempDir();
    const bin = `${dir.path}/bin`;
    await Deno.mkdir(bin);
    const counter = `${dir.path}/npm-runs`;
    await Deno.writeTextFile(`${bin}/npm`, stubNpm(counter), { mode: 0o755 });
    const cache = `${dir.path}/cache`;
    const kimi = new URL("./kimi.ts", import.meta.url).href;
    const code = `import { installKimi } from ${JSON.stringify(kimi)};
      const i = await installKimi("9.9.9", ${JSON.stringify(cache)});
      console.log(i.dir);`;
    const run = () =>
      new Deno.Command(Deno.execPath(), {
        args: ["eval", "--no-check", code],
        env: { PATH: `${bin}:${Deno.env.get("PATH")}` },
        stdout: "piped",
        stderr: "piped",
      }).output();
    const outs = await Promise.all([run(), run(), run(), run()]);
    for (const o of outs) assertEquals(o.code, 0, new TextDecoder().decode(o.stderr));
    const dirs = outs.map((o) => new TextDecoder().decode(o.stdout).trim());
    assertEquals(new Set(dirs), new Set([`${cache}/9.9.9`]));
    assertEquals((await Deno.readTextFile(counter)).trim().split("\n").length, 1, "npm ran once");
    assertEquals((await run()).code, 0);
    assertEquals((await Deno.readTextFile(counter)).trim().split("\n").length, 1, "the cache is reused");
    const left = [...Deno.readDirSync(cache)].map((e) => e.name).sort();
    assertEquals(left, ["9.9.9"], "no lock or staging directory is left behind");
  },
});
