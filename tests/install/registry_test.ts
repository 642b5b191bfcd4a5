/**
 * A first `deno task -q install` with no npm registry in reach: Deno stops before any of ours runs (its implicit
 * install of deno.lock's packages comes before every task), so README's troubleshooting is where our words are.
 * These pin what it quotes: Deno's first line, the URL it names, and that `DENO_CERT` is the fix for a proxy's
 * certificate.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { ROOT } from "../support/run.ts";
import { closedAddress, exists, isolatedEnv } from "./helpers.ts";

const readme = await Deno.readTextFile(`${ROOT}/README.md`);
const entry = readme.split("\n- ").find((item) =>
  item.startsWith(`**"error: Failed caching npm package '…'"**`)
);

/** `deno task -q install` in this checkout with an empty DENO_DIR and the npm registry at `registry`. */
async function firstInstall(registry: string, extra: Record<string, string> = {}) {
  await using dir = await tempDir();
  const env = isolatedEnv(`${dir.path}/home`, {
    DENO_DIR: `${dir.path}/deno`,
    NPM_CONFIG_REGISTRY: registry,
    ...extra,
  });
  await Deno.mkdir(env.HOME);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "install"],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return {
    code: out.code,
    stdout: text(out.stdout),
    stderr: text(out.stderr),
    touched: await exists(`${env.HOME}/.openviking`) || await exists(`${env.HOME}/.kimi-code`),
  };
}

Deno.test("no registry: Deno's words as README quotes them, the URL it tried, nothing of ours ran", async () => {
  assertTrue(entry, "README's troubleshooting has the Failed caching npm package entry");
  const registry = `${closedAddress()}/`;
  const run = await firstInstall(registry);
  assertEquals(run.code, 1, run.stderr);
  assertMatch(run.stderr, /^error: Failed caching npm package '[^']+'\n/);
  assertStringIncludes(run.stderr, registry, "its Caused by lines name the registry it tried");
  assertEquals(run.stdout, "", "our first line never came");
  assertTrue(!run.touched, "nothing in HOME");
  for (
    const fix of [
      "NPM_CONFIG_REGISTRY",
      "DENO_CERT",
      "DENO_TLS_CA_STORE=system",
      "HTTPS_PROXY",
      "release binary",
    ]
  ) {
    assertStringIncludes(entry!, fix);
  }
});

Deno.test("a registry behind a certificate Deno does not know: invalid peer certificate, and DENO_CERT trusts it", async () => {
  await using dir = await tempDir();
  const [ca, cert, key] = ["ca.pem", "cert.pem", "key.pem"].map((f) => `${dir.path}/${f}`);
  await Deno.writeTextFile(
    `${dir.path}/leaf.ext`,
    "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
  );
  // A proxy's own CA, and the certificate it signs for the registry's host with it.
  const steps = [
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=proxy-ca",
      "-keyout",
      "ca.key",
    ]
      .concat(["-out", ca]),
    ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", "leaf.csr"],
    ["x509", "-req", "-in", "leaf.csr", "-CA", ca, "-CAkey", "ca.key", "-CAcreateserial", "-days", "1"]
      .concat(["-extfile", "leaf.ext", "-out", cert]),
  ];
  for (const args of steps) {
    const made = await new Deno.Command("openssl", { args, cwd: dir.path, stdout: "null", stderr: "null" })
      .output().catch(() => undefined);
    if (!made?.success) {
      console.warn("skipped: openssl could not make a certificate here");
      return;
    }
  }
  const asked: string[] = [];
  await using server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(cert),
    key: await Deno.readTextFile(key),
    onListen: () => {},
  }, (req) => {
    asked.push(new URL(req.url).pathname);
    return new Response("not here", { status: 404 });
  });
  const registry = `https://127.0.0.1:${server.addr.port}/`;

  const untrusted = await firstInstall(registry);
  assertEquals(untrusted.code, 1, untrusted.stderr);
  assertMatch(untrusted.stderr, /^error: Failed caching npm package '[^']+'\n/);
  assertStringIncludes(untrusted.stderr, "invalid peer certificate");
  assertEquals(asked, [], "no request got through the handshake");

  const trusted = await firstInstall(registry, { DENO_CERT: ca });
  assertEquals(trusted.code, 1, "the stand-in registry has no packages");
  assertTrue(!trusted.stderr.includes("invalid peer certificate"), JSON.stringify(trusted.stderr));
  assertTrue(asked.length > 0, "with DENO_CERT, Deno's requests reach the registry");
});
