import { assertEquals, assertTrue } from "../support/assert.ts";
import { redact, REDACTED } from "../../runtime/redact.ts";

Deno.test("redact: <private> spans go, even unclosed", () => {
  assertEquals(redact("keep <private>my ssn 123</private> this"), "keep  this");
  assertEquals(redact("a <PRIVATE note=1>x\ny</Private> b"), "a  b");
  assertEquals(redact("start <private>never closed"), "start ");
});

Deno.test("redact: obvious credentials", () => {
  const cases: [string, string][] = [
    ["key sk-abcdefghijklmnopqrstuv12 end", `key ${REDACTED} end`],
    ["sk-ant-api03-abcdefghijklmnopqrstuvwx", REDACTED],
    ["aws AKIAIOSFODNN7EXAMPLE here", `aws ${REDACTED} here`],
    ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", REDACTED],
    ["github_pat_11ABCDEFG0123456789_abcdefghijklmnop", REDACTED],
    ["xoxb-1234567890-abcdefghij", REDACTED],
    ["Authorization: Bearer eyJhbGciOi.abc.def", `Authorization: Bearer ${REDACTED}`],
    ["password=hunter2 and more", `password=${REDACTED} and more`],
    ['{"token": "abc123xyz"}', `{"token": ${REDACTED}}`],
    ["secret='s3cr3t'", `secret=${REDACTED}`],
    ["DB_PASSWORD=p@ss word", `DB_PASSWORD=${REDACTED}`],
    ["export GITHUB_TOKEN=abc", `export GITHUB_TOKEN=${REDACTED}`],
    ["-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", REDACTED],
    ["-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blb", REDACTED],
  ];
  for (const [input, expected] of cases) assertEquals(redact(input), expected, input);
});

Deno.test("redact: ordinary prose and code are untouched", () => {
  const texts = [
    "Use tabs, not spaces. The token budget is 2000.",
    "const tokens = tokenize(input); // split into tokens",
    "PATH=/usr/bin:/bin\nHOME=/home/user",
    "ask-for-help and task-12345 are fine",
    "I prefer the password manager 1Password.",
  ];
  for (const t of texts) assertEquals(redact(t), t);
  assertTrue(true);
});
