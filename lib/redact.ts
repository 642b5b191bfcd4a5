/** Redaction of `<private>` spans and credentials (each rule linear), and the scrub of what we show or log. */

import { ESCAPE_SEQUENCE } from "./neutralize.ts";

/** Placeholder that replaces a secret. */
export const REDACTED = "[REDACTED]";
/** Records a secret a rule found and returns what stands in its place. */
type Hide = (secret: string) => string;
const plain: Hide = () => REDACTED;
/** `<private…>…</private>` spans (unclosed: to the end); a `<private` with no `>` after it ends the scan. */
const PRIVATE = /<private\b[^>]*(?:(>)([\s\S]*?)(?:<\/private\s*>|$)|$)/gi;
/** Removes `<private>…</private>` spans; `hide` is shown each one's content, and each of its lines. */
function stripPrivate(text: string, hide: Hide): string {
  return text.replace(PRIVATE, (m, opened, content: string) => {
    if (!opened) return m;
    const lines = content.split(/\r?\n/);
    for (const part of lines.length > 1 ? [content, ...lines] : lines) hide(part);
    return "";
  });
}

/** A private key block's END line (its BEGIN line was in another message). */
const KEY_END =
  /-----END [A-Z0-9 _-]{0,40}(?:PRIVATE|SECRET) KEY(?: BLOCK)?-----|---- END SSH2 [A-Z ]{0,20}PRIVATE KEY ----/g;
const blank = (c: string | undefined) => c === " " || c === "\t";
/** Where the base64 line ending at the line break before `at` starts (not before `floor`), if it is one. */
function keyLineBefore(text: string, at: number, floor: number): number | undefined {
  if (text[at - 1] !== "\n") return undefined;
  let end = at - 1;
  if (text[end - 1] === "\r") end--;
  while (end > floor && blank(text[end - 1])) end--;
  let start = end;
  while (start > floor && /[A-Za-z0-9+/=]/.test(text[start - 1])) start--;
  const body = start < end;
  while (start > floor && blank(text[start - 1])) start--;
  return body && (start === floor || text[start - 1] === "\n") ? start : undefined;
}

/** The second half of a private key pasted in two messages: the base64 lines before an END line, and it. */
function redactKeyEnds(text: string, hide: Hide): string {
  let [out, copied] = ["", 0];
  for (const m of text.matchAll(KEY_END)) {
    let start = m.index;
    while (keyLineBefore(text, start, copied) !== undefined) start = keyLineBefore(text, start, copied)!;
    if (text.slice(start, m.index).replace(/\s/g, "").length < 24) continue; // a word, no key
    out += text.slice(copied, start) + hide(text.slice(start, m.index + m[0].length));
    copied = m.index + m[0].length;
  }
  return out + text.slice(copied);
}

const COOKIE_PAIR = /(^|;)([ \t]*[^=;\s]+=)([^;]*)/g;
/** The cookies' values of a cookie header's `pairs`; of a `Set-Cookie`'s, the first (then attributes). */
function redactCookies(pairs: string, set: boolean, hide: Hide): string {
  return pairs.replace(COOKIE_PAIR, (m, sep, name, raw: string, at: number) => {
    const value = raw.trim();
    if ((set && at > 0) || !value || NO_SECRET.test(value)) return m;
    return sep + name + raw.replace(value, () => hide(value));
  });
}

/** Whether base64 `b64` decodes to `user:password`: a printable user name, a colon, any password. */
function userAndPassword(b64: string): boolean {
  try {
    return /^[ -9;-~]+:./s.test(atob(b64));
  } catch {
    return false;
  }
}

/** Where a key that may name a secret is: a secret word in it (or `session`, `sk`), the scan's quick first look. */
const SECRET_HINT_WORD = /secret|token|pass|pw|psk|cred|auth|key|sig|hmac|salt|otp|pin/i;
const SECRET_HINT = new RegExp(`${SECRET_HINT_WORD.source}|session|sk`, "gi");
/** A key and its assignment operator, optionally quoted (`KEY=`, `"key": `) or subscripted (`env['KEY'] =`). */
const KEY_AT = /-{0,2}(["']?)([A-Za-z_][\w.-]*)\1\]?([ \t]*)(:=|=>|\?=|=|:)([ \t]*)/y;
/** An assignment's value: a quoted string on its line, else a run of value characters. */
const VALUE = /"[^"\r\n]*"|'[^'\r\n]*'|`[^`\r\n]*`|(?:[^\s"'`,;&\\]|\\(?![nrt]))+/y;
const OPENING_QUOTE = /^["'`]/;
/** The quote that ends a JSON string (a `.env` line pasted in one ends there). */
const STRING_END = String.raw`(?!"[ \t]*(?:[,}\]:]|$))`;
/** The rest of a spaced `.env` or ini line (`KEY = a b`). */
const LINE_REST = new RegExp(String.raw`(?:${STRING_END}[^\r\n])+`, "y");
/** A `.env` line's value after a glued `=`: up to a blank, as the shell reads it (`KEY=v make test`). */
const LINE_WORD = new RegExp(String.raw`(?:${STRING_END}\S)+`, "y");
/** After a YAML block scalar's `|` or `>`: a comment, blank lines, the indent. */
const BLOCK_START = /(?:[ \t]+#[^\r\n]*)?(?:[ \t]*\r?\n)+[ \t]+/y;
/** The words of a key name: `AWSSecretAccessKey`, `_authToken`, `DB_PASSWORD`, `x-api-key`. */
const KEY_WORDS = /[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+/g;
/**
 * Key names' words that make it a secret's; last words that make it about one (`TOKEN_URL`); ends of glued ones
 * (`PGPASSWORD`); words before a last `key` that make it none (`s3_key`); keys a secret only when it looks random.
 */
// deno-fmt-ignore: word lists
const [SECRET_WORDS, ABOUT_SECRET, PLAIN_KEYS, WEAK_KEYS] = [
  "secret token password passwd pwd pw psk sk pass passphrase credential credentials creds auth apikey accesstoken authtoken secretkey privatekey accesskey sig signature sshpass",
  "url uri endpoint host path file dir name type mode method header count length len size limit max min enabled required ttl timeout expiry expires format prefix provider version id stdin",
  "public pub primary foreign sort partition cache hash range row lookup idempotency unique map dict object index composite hot s3 i18n translation group order bucket schema",
  "key hmac salt otp pin",
].map((list): ReadonlySet<string> => new Set(list.split(" ")));
const randomRun = (v: string): boolean =>
  /^[\w+/=~-]{8,}$/.test(v) && (v.match(/\d(?=[A-Za-z])|[A-Za-z](?=\d)/g) ?? []).length >= 3;
const GLUED_SECRET_END = /(?:password|passwd|passphrase|secret|token|apikey|secretkey|accesskey|privatekey)$/;
/** Whether a key name says its value is a secret: a secret word in it, or `…_key` of a secret kind. */
function secretName(key: string): boolean {
  const words = (key.match(KEY_WORDS) ?? []).map((w) => w.toLowerCase());
  const last = words.at(-1) ?? "";
  if (ABOUT_SECRET.has(last)) return false;
  if (last === "key" || last === "keys") return words.length > 1 && !PLAIN_KEYS.has(words.at(-2)!);
  return words.some((w) => SECRET_WORDS.has(w) || GLUED_SECRET_END.test(w));
}

/** Whether a key names a session (`BW_SESSION`, `OP_SESSION_my`, not `session_id`): a secret when it looks generated. */
function sessionName(key: string): boolean {
  const words = (key.match(KEY_WORDS) ?? []).map((w) => w.toLowerCase());
  return words.includes("session") && !ABOUT_SECRET.has(words.at(-1)!);
}

/** Values that hold no secret: a redaction already made, a placeholder or variable, a number, a keyword. */
const NO_SECRET =
  /^(?:\[REDACTED\].*|\ue000.*|\*+|[$%].*|\{\{.*|<[^>]*>|\d[\d._]*|true|false|null|none|nil|undefined|yes|no|on|off)$/i;
/** Unquoted values that are code: a call, an index or a block, a member path, a URL, an operator. */
const CODE = /[()[\]{}]|^[=<>!&|?]|^[A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)+;?$|^[a-z][a-z0-9+.-]*:\/\//i;
/** Whether an assignment's value is a secret: quoted, literal, or unquoted more than prose; a weak key's: random. */
function secretValue(raw: string, literal: boolean, weak = false): boolean {
  const quote = OPENING_QUOTE.exec(raw)?.[0] ?? "";
  const v = quote ? raw.slice(quote.length, -quote.length).trim() : raw.trimEnd();
  if (!v || NO_SECRET.test(v)) return false;
  if (weak) return randomRun(v);
  if (quote) return true;
  return !CODE.test(v) &&
    (literal || (/\p{N}/u.test(v) && /\p{L}/u.test(v)) || /[^\p{L}\p{N}_.-]/u.test(v) || v.length >= 16);
}

const keyChar = (text: string, i: number): boolean => /[\w.-]/.test(text[i] ?? "");
const stickyAt = (re: RegExp, text: string, at: number) => Object.assign(re, { lastIndex: at }).exec(text);
/** Whether only blanks (and `export`) precede `at` on its line. */
function lineStart(text: string, at: number): boolean {
  const blanksBefore = (i: number) => {
    while (i > 0 && blank(text[i - 1])) i--;
    return i;
  };
  let i = blanksBefore(at);
  if (i < at && text.endsWith("export", i)) i = blanksBefore(i - 6);
  return i === 0 || text[i - 1] === "\n" || text[i - 1] === "\r";
}

/** Replaces the values of assignments whose key names a secret; one scan from secret word to secret word. */
function redactAssignments(text: string, hide: Hide): string {
  let [out, copied] = ["", 0];
  SECRET_HINT.lastIndex = 0;
  for (let hint = SECRET_HINT.exec(text); hint; hint = SECRET_HINT.exec(text)) {
    let start = hint.index;
    while (start > 0 && keyChar(text, start - 1)) start--;
    let keyEnd = hint.index + hint[0].length;
    while (keyEnd < text.length && keyChar(text, keyEnd)) keyEnd++;
    SECRET_HINT.lastIndex = keyEnd;
    const quoted = start > 0 && (text[start - 1] === '"' || text[start - 1] === "'");
    const closed = quoted ? stickyAt(KEY_AT, text, start - 1) : null;
    const m = closed ?? stickyAt(KEY_AT, text, start);
    // A key inside a string (`"password:" …`): the quote after it closes that string and opens no value.
    if (quoted && !closed && m && text[m.index + m[0].length] === text[start - 1]) continue;
    const weak = m !== null && (WEAK_KEYS.has(m[2].toLowerCase()) || sessionName(m[2]));
    if (!m || !(weak || secretName(m[2]))) continue;
    const [head, , key, before, op, after] = m;
    const end = m.index + head.length;
    const line = op === "=" && !OPENING_QUOTE.test(text.slice(end, end + 1)) && lineStart(text, m.index);
    const spaced = before !== "" || after !== ""; // `KEY=a b` is the shell's: a blank ends the value
    const rest = line ? (spaced ? LINE_REST : LINE_WORD) : VALUE;
    let [at, value] = [end, (stickyAt(rest, text, end)?.[0] ?? "").trimEnd()];
    const scalar = /^[|>](?:[1-9][+-]?|[+-][1-9]?)?$/.test(value); // a block scalar, else a plain one below
    const block = op === ":" && (scalar || value === "" || value.startsWith("#"))
      ? stickyAt(BLOCK_START, text, scalar ? end + value.length : end - after.length)
      : null;
    if (block) { // the block's first line is the value; a plain scalar's is one word, not a key or list item
      at = block.index + block[0].length;
      value = (stickyAt(LINE_REST, text, at)?.[0] ?? "").trimEnd();
      if (!scalar && /\s|^[\w.-]+:(?!\S)/.test(value)) value = "";
    }
    const next = text.slice(at + value.length, at + value.length + 1);
    const prefix = OPENING_QUOTE.test(next) && /^[A-Za-z]{1,2}$/.test(value); // a string's prefix: f"…", rb'…'
    const literal = (block !== null && scalar) ||
      (op === "=" && ((!before && !after) || (line && !/[a-z]/.test(key))));
    let redacted = value !== "" && !prefix && secretValue(value, literal, weak);
    if (!redacted && line && !block) { // the line's first word, when a note or a comment follows it
      const word = stickyAt(VALUE, text, at)?.[0] ?? "";
      if (word !== value && secretValue(word, literal, weak)) [value, redacted] = [word, true];
    }
    if (redacted) {
      out += text.slice(copied, at) + hide(value);
      copied = at + value.length;
    }
    if (redacted || !line) SECRET_HINT.lastIndex = Math.max(keyEnd, at + value.length);
  }
  return out + text.slice(copied);
}

/** An AWS key id, or what a typo left of one: the anchor of a bare secret beside it. */
const AWS_KEY_ID = /\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{12,24}\b/g;
/** A base64(url) run of 24 or more; lines wrapped at 76 (`base64`) or 64 (PEM) are one run. */
const BASE64_RUN =
  /(?<![\w+/\\-])(?:(?:[\w+/-]{64}(?:[\w+/-]{12})?\r?\n(?=[\w+/-]))+[\w+/-]+|[\w+/-]{24,})={0,2}(?![\w+/=-])/g;

/** A bare AWS secret access key: a mixed-case base64 run with a digit, 40 or more, within 200 of an AWS key id. */
function redactAwsSecrets(text: string, hide: Hide): string {
  const ids = [...text.matchAll(AWS_KEY_ID)].map((m) => m.index);
  if (!ids.length) return text;
  let i = 0;
  return text.replace(BASE64_RUN, (run: string, at: number) => {
    if (run.length < 40) return run;
    while (i + 1 < ids.length && ids[i + 1] <= at) i++;
    const near = [ids[i], ids[i + 1]].some((id) => id !== undefined && Math.abs(id - at) <= 200);
    return near && /[a-z]/.test(run) && /[A-Z]/.test(run) && /\d/.test(run) && !/[-_]/.test(run)
      ? hide(run)
      : run;
  });
}

/** The UTF-8 text base64 or base64url `b64` (blanks aside) decodes to, or undefined. */
export function base64Text(b64: string): string | undefined {
  try {
    const standard = b64.replace(/\s+|[-_]/g, (c) => c === "-" ? "+" : c === "_" ? "/" : "");
    return UTF8.decode(Uint8Array.fromBase64(standard));
  } catch {
    return undefined;
  }
}
const UTF8 = new TextDecoder("utf-8", { fatal: true });
/** A credential wrapped in base64: a run whose decoded text (UTF-8, no control characters) a rule finds one in. */
function redactBase64(text: string, hide: Hide): string {
  return text.replace(BASE64_RUN, (run: string) => {
    const decoded = base64Text(run);
    const found = decoded !== undefined && !/[^\P{Cc}\t\n\r]/u.test(decoded) &&
      redactWith(FOLDED_RULES, decoded) !== decoded;
    return found ? hide(run) : run;
  });
}

/** A secret's names in prose by language, the words that tie a qualifier to it (`das Passwort für…`), and "is". */
const PROSE_SECRETS: readonly [name: RegExp, of: RegExp, is: RegExp | null][] = [
  [/secret|password|passwd|pass[ \t]?phrase|passcode|token|api[ _-]?key/, /for|of/, /is|was/],
  [/passwort|kennwort/, /für|von|der|des/, /ist|lautet|war/],
  [/contraseña/, /de|del|para/, /es|era/],
  [/mot[ \t]+de[ \t]+passe|jeton/, /de|du|pour/, /est|était/],
  [/senha/, /de|do|da|para/, /é|era/],
  [/пароль|токен|ключ(?:[ \t]+API)?/, /от|для/, null],
];
/** An unquoted value a sentence gives a secret's name (a plain word is not it: up to three of them qualify; `-field=password` is no sentence). */
const SECRET_IN_PROSE_UNQUOTED = new RegExp(
  String.raw`(?<![\p{L}\p{N}_=])((?:${
    PROSE_SECRETS.map(([name, of, is]) => {
      const verb = is ? String.raw`[ \t]+(?:${is.source})` : "";
      const qualifier = String.raw`[ \t]+(?:${of.source})(?:[ \t]+[^\s\\]+){1,3}?`;
      return `(?:${name.source})(?:${qualifier}(?:${verb}|(?=[ \t]*:))|(?:${verb})?)`;
    }).join("|")
  })(?:[ \t]*[:=—–-])?[ \t]+)(?![\p{L}_.-]{1,15}[.,;:!?)]*(?![^\s"'\x60\\]))([^\s"'\x60\\]{4,200})`,
  "giu",
);

/**
 * Commands and their option that gives a password, and what may follow it: blanks or `=`; MySQL's and 7-Zip's `-p`
 * only glued; `smbclient -U user%password`; `htpasswd -b`'s third argument; `net use`'s after the share; the token
 * of `consul acl set-agent-token`, `mc alias set`'s secret key; `echo password | … --password-stdin` (or `ssh-add -`).
 */
// deno-fmt-ignore: one command a line
const PASSWORD_OPTIONS: readonly [command: RegExp, option: RegExp, after?: RegExp][] = [
  [/mysql|mariadb|mysqldump|mysqladmin|mariadb-dump/, /-p/],
  [/sshpass/, /-p(?:[ \t]+|=)?/],
  [/(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry|az)[ \t]+login/, /(?:-p|--password)(?:[ \t]+|=)/],
  [/redis-cli/, /(?:-a|--pass)(?:[ \t]+|=)/],
  [/(?:un)?zip/, /(?:-P|--password)(?:[ \t]+|=)/],
  [/ssh-keygen/, /-[NP](?:[ \t]+|=)/],
  [/smbclient/, /(?:-U|--user)(?:[ \t]+|=)?["']?[^\s"'%]+%/],
  [/7z[az]?/, /-p/],
  [/(?:un)?rar/, /-h?p(?!-)/],
  [/lftp/, /(?:-u|--user)(?:[ \t]+|=)["']?[^\s"',]+,/],
  [/ipmitool/, /-P(?:[ \t]+|=)/],
  [/[xw]freerdp3?|sdl-freerdp3?/, /\/p:/],
  [/security[ \t]+add-(?:generic|internet)-password/, /-w[ \t]+(?!-)/],
  [/wpa_passphrase/, /(?!-)\S+[ \t]+/], // after the network's name
  [/rclone[ \t]+obscure/, /(?:)/],
  [/aws[ \t]+ssm[ \t]+put-parameter(?=[^\r\n|;&]*[ \t=]SecureString\b)/, /--value(?:[ \t]+|=)/],
  [/az[ \t]+keyvault[ \t]+secret[ \t]+set/, /--value(?:[ \t]+|=)/],
  [/ansible-vault[ \t]+encrypt_string/, /(?!-)/],
  [/rabbitmqctl/, /(?:add_user|change_password)[ \t]+(?!-)\S+[ \t]+/],
  [/https?/, /(?:-a|--auth)(?:[ \t]+|=)["']?[^\s"':]+:/], // HTTPie's `-a user:password`
  [/openssl/, /-k(?:[ \t]+|=)/],
  [/keytool/, /-(?:src|dest)?(?:storepass|keypass)(?:[ \t]+|=)/],
  [/mongo(?:sh)?/, /(?:-p|--password)(?:[ \t]+|=)/],
  [/sqlcmd/, /-P(?:[ \t]+|=)/],
  [/ldap(?:search|add|modify|delete|passwd|whoami)/, /-w(?:[ \t]+|=)/],
  [/htpasswd/, /-(?![A-Za-z]*n)[A-Za-z]*b[A-Za-z]*[ \t]+(?:-\w+[ \t]+)*(?!-)\S+[ \t]+\S+[ \t]+/],
  [/htpasswd/, /-(?=[A-Za-z]*n)[A-Za-z]*b[A-Za-z]*[ \t]+(?:-\w+[ \t]+)*(?!-)\S+[ \t]+/], // -n: no file
  [/cf/, /auth[ \t]+(?!-)\S+[ \t]+/],
  [/user(?:mod|add)/, /(?:-p|--password)(?:[ \t]+|=)/],
  [/twine/, /(?:-p|--password)(?:[ \t]+|=)/],
  [/psexec(?:64)?/, /-p(?:[ \t]+|=)/],
  [/net[ \t]+user/, /(?![/*])[^\s;|&]+[ \t]+(?![/*])/], // `net user <name> <password>` (not `*`, which asks, nor an `/option`)
  [/net[ \t]+use/, /(?:[A-Za-z]:[ \t]+)?\\\\\S+(?:[ \t]+\/u(?:ser)?:\S+)?[ \t]+(?!\/)/], // after the share, before or after `/user:`
  [/consul[ \t]+acl[ \t]+set-agent-token/, /(?:agent|default|replication|recovery|config_file_service_registration|dns)[ \t]+/],
  [/mc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)/, /(?!-)\S+[ \t]+(?!-)\S+[ \t]+(?!-)\S+[ \t]+/], // alias, URL, access key, the secret key
  [/echo|printf/, /(?:)/, /[ \t]*>>?[ \t]*["']?[^\s"'|;&]*(?:pass|secret|token|cred|api[_-]?key)|[ \t]*\|[^\r\n;&]{0,200}?[ \t](?:--password-stdin\b|sudo(?:[ \t]+-\w+)*?[ \t]+-[A-Za-z]*S\b|chpasswd\b|passwd\b|gcloud[ \t]+secrets\b|docker[ \t]+secret[ \t]+create\b|kubectl[ \t]+create[ \t]+secret\b|kinit\b(?![^\r\n|;&]*[ \t]-[A-Za-z]*k\b)|ssh-add[ \t]+-(?![\w-]))/],
];
/** A password a command's option gives: quoted (also in a JSON string), or up to a blank, quote, escape or pipe. */
const OPTION_VALUE = String.raw`\\"[^"\r\n\\]*\\"|'[^'\r\n]*'|"[^"\r\n]*"|[^\s"'\x60\\|]+`;
/** The password options of `rows` (PASSWORD_OPTIONS' shape): for each command, the first. */
const passwordOption = (rows: typeof PASSWORD_OPTIONS) =>
  new RegExp(
    String.raw`\b((?:${
      rows.map(([c, o, after]) =>
        String.raw`(?:${c.source})\b[^\r\n|;&]{0,200}?[ \t](?:${o.source})` +
        (after ? `(?=(?:${OPTION_VALUE})(?:${after.source}))` : "")
      ).join("|")
    }))(${OPTION_VALUE})`,
    "g",
  );
/** The second password option of a command that takes two (`ssh-keygen -p -P old -N new`). */
const SECOND_PASSWORD_OPTIONS: typeof PASSWORD_OPTIONS = [[
  /ssh-keygen\b[^\r\n|;&]{0,200}?[ \t]-[NP]/,
  /-[NP](?:[ \t]+|=)/,
]];

/** XML's named values (as YAML's): an element's text or CDATA, a plist's `<key>` and `<string>`, `key=…value=`. */
const XML_SECRETS: readonly RegExp[] = [
  /(<(?<tag>(?:[\w.-]+:)?(?<name>[\w.-]+))(?:[ \t][^<>\r\n]*)?>)[^<\r\n]+(?=<\/\k<tag>>)/g,
  /(<(?<tag>(?:[\w.-]+:)?(?<name>[\w.-]+))(?:[ \t][^<>\r\n]*)?><!\[CDATA\[)(?:[^\]<\r\n]|\](?!\]>)|<(?!!\[CDATA\[))*(?=\]\]><\/\k<tag>>)/g,
  /(<key>(?<name>[\w.-]+)<\/key>\s*<string>)[^<\r\n]+(?=<\/string>)/g,
  /([ \t](?:key|name)=(?<q>["'])(?<name>[\w.:-]+)\k<q>[ \t]+value=(?<q2>["']))[^"'\r\n]*(?=\k<q2>)/g,
  /(<input\b[^<>\r\n]*?\btype=(?<q>\\?["'])(?<name>password)\k<q>[^<>\r\n]*?\bvalue=(?<q2>\\?["']))[^"'\r\n\\]+(?=\k<q2>)/gi,
  /(<(?<tag>[\w.:-]+)[ \t][^<>\r\n]*?\bname=(?<q>\\?["'])(?<name>[\w.:-]+)\k<q>[^<>\r\n]*>)[^<\r\n]+(?=<\/\k<tag>>)/g,
];
/** Format and default-ignorable characters (variation selectors, Hangul fillers…) between printable ASCII. */
const INVISIBLE_IN_ASCII = /(?<=[!-~])[\p{Cf}\p{DI}]+(?=[!-~])/gu;
/**
 * Letters of other scripts a reader takes for Latin ones (Unicode's confusables of ASCII letters and digits among
 * Cyrillic, Greek and Armenian, and Latin's own without a decomposition): `pаssword` with a Cyrillic `а`.
 */
const LOOKALIKES: Readonly<Record<string, string>> = Object.fromEntries(
  ("а a е e һ h і i ј j к k о o р p с c ѕ s у y х x ԁ d ԛ q ԝ w ӏ l ү y ѵ v " +
    "А A В B Е E З 3 К K М M Н H О O Р P С C Т T Х X Ѕ S І I Ј J Ү Y Ԛ Q Ԝ W Ӏ I Ѵ V " +
    "α a β B γ y ι i κ k ν v ο o ρ p τ t υ u χ x ϲ c ϳ j ω w " +
    "Α A Β B Ε E Ζ Z Η H Ι I Κ K Μ M Ν N Ο O Ρ P Τ T Υ Y Χ X Ϲ C Ϳ J " +
    "օ o ս u հ h ո n ց g զ q ı i ȷ j ɑ a ɡ g ɩ i ɪ I ʀ R ʏ Y ᴀ A ᴄ C ᴅ D ᴇ E ᴋ K ᴍ M ᴏ O ᴘ P ᴛ T ᴜ U ᴠ V ᴡ W ᴢ Z")
    .match(/\S \S/gu)!.map((pair) => [pair[0], pair[2]]),
);
/** ASCII a JSON `\u` escape may stand for inside a token or a key (a quote, blank or separator would end one). */
const ESCAPED_WORD_CHAR = /^[\w.:=+/@~-]$/;
/**
 * What can hide a token: an escape sequence (also `\u001b[…` in JSON); a JSON escape (`\u`, a pair for a surrogate
 * pair, or `\n \r \t \" \\`; more backslashes when escaped again, a run read from its start only: linear);
 * marks and invisible characters (dropped after ASCII); a character whose compatibility form folds to ASCII
 * (Latin, Greek, Common, U+FB29), a {@link LOOKALIKES} letter; {@link MASK}.
 */
const DISGUISE = new RegExp(
  String
    .raw`${ESCAPE_SEQUENCE.source}|\\u001[bB]\[[0-?]*[ -/]*[@-~]|(?<json>(?<!\\)\\+u[dD][89abAB][\da-fA-F]{2}\\+u[dD][c-fC-F][\da-fA-F]{2}|(?<!\\)\\+u[\da-fA-F]{4})|(?<escaped>(?<!\\)\\+[nrt"]|\\\\)|[\p{M}\p{Cf}\p{DI}]+|(?![\0-\x7f])[\p{sc=Latn}\p{sc=Zyyy}\p{sc=Grek}\ufb29\ue000${
    Object.keys(LOOKALIKES).join("")
  }]`,
  "gu",
);
/** The printable ASCII a character reads as: its NFKC form, its {@link LOOKALIKES} letter, or its unaccented letter. */
const asciiFolds = new Map<string, string>();
function asciiFold(c: string): string {
  const known = asciiFolds.get(c);
  if (known !== undefined) return known;
  const n = c.normalize("NFKC"), bare = c.normalize("NFD").replace(/\p{M}+/gu, "");
  const folded = n !== c && /^[ -~]+$/.test(n)
    ? n
    : LOOKALIKES[c] ?? (bare !== c && /^[A-Za-z]$/.test(bare) ? bare : "");
  if (asciiFolds.size < 1 << 16) asciiFolds.set(c, folded);
  return folded;
}
/** The character a JSON `\u` escape (or a pair) stands for, any backslashes before each `u` dropped. */
const unescaped = (escape: string): string =>
  String.fromCharCode(...escape.split(/\\+u/).slice(1).map((h) => Number.parseInt(h, 16)));
const ESCAPED: Readonly<Record<string, string>> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\" };

/** What the rules hide a secret with in a folded text: as long as the secret, so offsets hold. */
const MASK = "\ue000";
const mask: Hide = (secret) => MASK.repeat(secret.length);
/** A piece of a folded text: at `f` in it, from `o` in the text, `ol` long; `copy`: the same characters. */
type Piece = { f: number; o: number; ol: number; copy: boolean };
/** A text as the rules read it, and its pieces. */
type Folded = { text: string; pieces: Piece[] };
/** `text` with its escapes decoded and its disguises undone; undefined when nothing folds. */
function folded(text: string): Folded | undefined {
  const pieces: Piece[] = [];
  let [out, copied, changed, asciiEnd] = ["", 0, false, -1]; // asciiEnd: where the last ASCII (or fold) ended
  const put = (s: string, o: number, ol: number, copy: boolean) => {
    pieces.push({ f: out.length, o, ol, copy });
    out += s;
  };
  for (const { 0: c, index: at, groups } of text.matchAll(DISGUISE)) {
    if (at > copied) put(text.slice(copied, at), copied, at - copied, true);
    if (at > copied && /[!-~]/.test(text[at - 1])) asciiEnd = at;
    copied = at + c.length;
    const json = groups?.json !== undefined, escaped = groups?.escaped !== undefined;
    const read = json ? unescaped(c) : escaped ? ESCAPED[c.at(-1)!] : c;
    const escape = !json && !escaped && c.charCodeAt(0) < 0xa0;
    const invisible = !escape && /^[\p{M}\p{Cf}\p{DI}]/u.test(read);
    const word = escaped || (json && ESCAPED_WORD_CHAR.test(read));
    const fold = escape || invisible ? "" : c === MASK ? "\ufffd" : word ? read : asciiFold(read);
    if (escape || (invisible && asciiEnd === at)) { // dropped
      changed = true;
      if (invisible) asciiEnd = copied;
    } else if (fold && c !== MASK) {
      put(fold, at, c.length, false);
      [changed, asciiEnd] = [true, copied];
    } else put(fold || c, at, c.length, true);
  }
  if (!changed) return undefined;
  if (copied < text.length) put(text.slice(copied), copied, text.length - copied, true);
  return { text: out, pieces };
}

/** Where in the text the character at `k` of a folded text starts and ends (`pieces` in order; binary search). */
function origin(pieces: readonly Piece[], k: number): [number, number] {
  let [lo, hi] = [0, pieces.length - 1];
  while (lo < hi) { // the last piece starting at or before k (none is empty)
    const mid = (lo + hi + 1) >> 1;
    if (pieces[mid].f <= k) lo = mid;
    else hi = mid - 1;
  }
  const p = pieces[lo];
  return p.copy ? [p.o + k - p.f, p.o + k - p.f + 1] : [p.o, p.o + p.ol];
}

/**
 * `text` with what `rules` find hidden, read {@link folded} (escapes decoded, disguises undone), then as written:
 * a backslash may be no escape (`\\srv\share`), a letter no disguise (`пароль`).
 */
export function redactWith(rules: readonly Rule[], text: string, hide: Hide = plain): string {
  const f = folded(text);
  return rules.reduce((out, rule) => rule(out, hide), f ? redactFolded(text, f, rules, hide) : text);
}

/** Each span `rules` hide in the folded text `f` hidden in `text`, with what the fold dropped right after it. */
function redactFolded(text: string, f: Folded, rules: readonly Rule[], hide: Hide): string {
  const read = rules.reduce((out, rule) => rule(out, mask), f.text);
  if (read === f.text) return text;
  if (read.length !== f.text.length) return read.replaceAll(/\ue000+/g, REDACTED); // no offsets: the folded text
  let [out, copied] = ["", 0];
  for (let k = read.indexOf(MASK); k >= 0; k = read.indexOf(MASK, k)) {
    let end = k;
    while (read[end] === MASK) end++;
    const start = Math.max(origin(f.pieces, k)[0], copied);
    const stop = Math.max(
      origin(f.pieces, end - 1)[1],
      end < read.length ? origin(f.pieces, end)[0] : text.length,
    );
    if (stop > start) out += text.slice(copied, start) + hide(text.slice(start, stop));
    copied = Math.max(copied, stop);
    k = end;
  }
  return out + text.slice(copied);
}

/** A rule: `text` with the secrets it finds replaced by what `hide` returns for each. */
type Rule = (text: string, hide?: Hide) => string;
/** The secret of a raw value (the shape's named groups beside it): the value or a part of it, else undefined. */
type Pick = (raw: string, groups: Readonly<Record<string, string | undefined>>) => string | undefined;
/** A value {@link secretValue} takes (`literal`), after its sentence punctuation (kept when quoted whole). */
const valued = (literal: boolean, quotedWhole = false): Pick => (raw) => {
  const value = literal || (quotedWhole && /^["']/.test(raw)) ? raw : raw.replace(/[.,;:!?)]+$/, "");
  return secretValue(value, literal) ? value : undefined;
};

/**
 * The rules in the order they run (tests/support/credentials.ts has a sample of each): a shape whose match is the
 * secret (named after gitleaks'); shapes whose group 1 is kept, the rest of the match the value its pick (else all)
 * takes; or code.
 */
// deno-fmt-ignore: one rule a line, a table
const RULES: Readonly<Record<string, RegExp | [RegExp | readonly RegExp[], Pick?] | Rule>> = {
  "invisible-characters": (text) => text.replace(INVISIBLE_IN_ASCII, ""),
  disguised: (text, hide = plain) => redactWith(FOLDED_RULES, text, hide),
  "private-key": /(-----|---- )BEGIN ([A-Z0-9 _-]{0,40}(?:PRIVATE|SECRET) KEY(?: BLOCK)?)( ----|-----)[\s\S]*?(?:\1END \2\3|$)/g, // PEM, OpenSSH, PKCS#8, encrypted, PGP (PRIVATE or PGP 2's SECRET), SSH2 key blocks, to their END line (or the end).
  "private-key-end": (text, hide = plain) => redactKeyEnds(text, hide),
  "putty-private-key": [/(Private-Lines:[ \t]*\d+[ \t]*\r?\n[ \t]*)([A-Za-z0-9+/=]+(?=[ \t]*(?:[\r\n"'`]|$))(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/=]+(?=[ \t]*(?:[\r\n"'`]|$)))*)/g], // A PuTTY key file's private lines: the base64 lines after `Private-Lines: N` (as is, or in a JSON string).
  "aws-secret-access-key": (text, hide = plain) => redactAwsSecrets(text, hide),
  "base64-wrapped": (text, hide = plain) => redactBase64(text, hide),
  "ai-api-key": /\b(?:sk-[\w-]{16,}|pplx-[A-Za-z0-9]{40,}|gsk_[A-Za-z0-9]{40,}|xai-[A-Za-z0-9]{32,})/g,
  "aws-access-token": /\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/g,
  "aws-amazon-bedrock-api-key": /\bABSK[A-Za-z0-9+/]{100,}/g,
  "gcp-api-key": /\bAIza[\w-]{30,}/g,
  "google-oauth": /\b(?:ya29\.|GOCSPX-)[\w-]{20,}|(?<![\w/])1\/\/0[\w-]{40,}/g,
  "azure-ad-client-secret": /(?<![\w~.-])[\w~.]{3}\dQ~[\w~.-]{31,}/g,
  digitalocean: /\bdo[opr]_v1_[a-f0-9]{64}/g,
  "heroku-api-key-v2": /\bHRKU-AA[\w-]{50,}/g,
  "vault-token": /\b(?:hv[sb]\.[\w-]{24,}|s\.(?=[A-Za-z]*\d)[A-Za-z0-9]{24}\b)/g,
  "doppler-api-token": /\bdp\.(?:pt|st|sa|ct|scim|audit)\.(?:[\w-]{1,60}\.)?[A-Za-z0-9]{40,}/g,
  "databricks-api-token": /\bdapi[a-f0-9]{32}/g,
  github: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})/g,
  gitlab: /\b(?:gl(?:pat|dt|ft|rt|soat|ffct|cbt|imt|agent|oas|ptt)-|GR1348941)[\w.-]{20,}/g,
  "atlassian-api-token": /\bATATT3[\w=-]{100,}/g,
  "bitbucket-app-password": /\bATBB[A-Za-z0-9]{28,}/g,
  "npm-access-token": /\bnpm_[A-Za-z0-9]{36,}/g,
  "pypi-upload-token": /\bpypi-AgEIcHlwaS5vcmc[\w-]{50,}/g,
  "docker-hub-pat": /\bdckr_pat_[\w-]{20,}/g,
  "huggingface-access-token": /\b(?:hf|api_org)_[A-Za-z]{34}\b/g,
  stripe: /\b(?:(?:sk|rk)_(?:test|live|prod)|whsec)_[A-Za-z0-9]{10,}/g,
  "square-access-token": /(?<![\w+/=-])(?:EAAA|sq0atp-|sq0csp-)[\w-]{22,}/g,
  shopify: /\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}/g,
  "slack-token": /\bx(?:ox[abcdprse]|app)-[A-Za-z0-9%-]{10,}/g,
  "slack-webhook-url": /\bhooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9+/]{20,}/g,
  "discord-webhook-url": /\bdiscord(?:app)?\.com\/api\/webhooks\/\d+\/[\w-]{20,}/g,
  "sendgrid-api-token": /\bSG\.[\w-]{16,}\.[\w-]{16,}/g,
  "twilio-api-key": /\bSK[0-9a-fA-F]{32}\b/g,
  "linear-api-key": /\blin_api_[A-Za-z0-9]{40,}/g,
  "postman-api-token": /\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}/g,
  "sentry-token": /\bsntry[su]_[\w+/=]{40,}/g,
  "grafana-token": /\bgl(?:sa|c)_[\w+/=]{32,}/g,
  "age-secret-key": /\bAGE-SECRET-KEY-1[0-9A-Z]{58}/g,
  "telegram-bot-api-token": /(?<!\d)\d{8,10}:[\w-]{35}(?![\w-])/g,
  jwt: /(?<![\w-])eyJ[\w-]{10,}\.(?:\s{1,4}(?=eyJ))?eyJ[\w-]{10,}\.(?:\s{1,4}(?=[\w-]{8}))?[\w-]*/g,
  "hashicorp-tf-api-token": /\b[A-Za-z0-9]{14}\.atlasv1\.[\w=-]{60,}/g,
  "pulumi-api-token": /\bpul-[a-f0-9]{40}/g,
  "flyio-access-token": /\b(?:fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})/g,
  "new-relic-user-api-key": /\bNR(?:AK|II)-[A-Za-z0-9-]{27,32}/g,
  "planetscale-api-token": /\bpscale_(?:tkn|pw|oauth)_[\w=.-]{32,64}/g,
  "mailgun-private-api-token": /\bkey-[a-f0-9]{32}\b/g,
  "alibaba-access-key-id": /\bLTAI[A-Za-z0-9]{20}\b/g,
  "cloud-access-key-id": /\b(?:AKID[A-Za-z0-9]{32}|AKLT[\w-]{40,})/g,
  "discord-bot-token": /(?<![\w-])(?:[MNO][DTjz][\w-]{2}){5,6}[\w-]{0,3}\.[\w-]{6}\.[\w-]{27,40}(?![\w-])/g, // The user id in base64: each 4 characters of ASCII digits open with M, N or O, then D, T, j or z.
  "tailscale-key": /\btskey-[a-z]+-[A-Za-z0-9]+CNTRL-[A-Za-z0-9]{20,}/g,
  "supabase-token": /\b(?:sbp_[a-f0-9]{40}\b|sb_secret_[\w-]{20,})/g,
  "notion-token": /\b(?:ntn_[A-Za-z0-9]{40,}|secret_(?=[A-Za-z]*\d)[A-Za-z0-9]{43}\b)/g,
  "langsmith-api-key": /\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b/g,
  "replicate-api-token": /\br8_[A-Za-z0-9]{37}\b/g,
  "netlify-token": /\bnfp_[A-Za-z0-9]{36,}/g,
  "figma-token": /\bfig[dou]_[\w-]{40,}/g,
  "pinecone-api-key": /\bpcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,}/g,
  "1password-service-account-token": /\bops_eyJ[A-Za-z0-9+/]{100,}={0,3}/g,
  "mapbox-secret-token": /\bsk\.eyJ[\w-]{10,}\.[\w-]{20,}/g,
  "dynatrace-api-token": /\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b/g,
  "rubygems-api-token": /\brubygems_[a-f0-9]{48}\b/g,
  "airtable-pat": /\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b/g,
  "openshift-user-token": /\bsha256~[\w-]{43}(?![\w-])/g,
  "prefect-api-token": /\bpnu_[A-Za-z0-9]{36}\b/g,
  "contentful-pat": /\bCFPAT-[\w-]{43}(?![\w-])/g,
  "deno-deploy-token": /\bdd[pw]_[A-Za-z0-9]{36}\b/g,
  "sourcegraph-token": /\bsgp_(?:[a-fA-F0-9]{16}_)?[a-fA-F0-9]{40}\b/g,
  "neon-api-key": /\bnapi_[a-z0-9]{64}\b/g,
  "posthog-personal-api-key": /\bphx_[A-Za-z0-9]{43}\b/g,
  "resend-api-key": /\bre_(?=\w*\d)[A-Za-z0-9]{8}_[A-Za-z0-9]{24}\b/g,
  "cloudflare-origin-ca-key": /\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}\b/g,
  "braintree-access-token": /\baccess_token\$production\$[a-z0-9]{16}\$[a-f0-9]{32}/g,
  "crypt-hash": /(?<![\w$])\$(?:1|2[abxy]?|5|6|7|y|gy|md5|sha1|argon2(?:id|i|d))\$(?:[^\s$:'"\\]{1,64}\$){1,4}[./A-Za-z0-9+]{20,}/g, // A crypt(3) password hash, quoted or in a shadow line: `$6$salt$…`, bcrypt's `$2b$12$…`, yescrypt's `$y$…`, Argon2's.
  "mailchimp-api-key": /\b[a-f0-9]{32}-us\d{1,2}\b/g,
  "dropbox-api-token": /\bsl\.(?:u\.)?[\w-]{130,}/g,
  "feishu-webhook-url": /\bopen\.(?:feishu\.cn|larksuite\.com)\/open-apis\/bot\/v2\/hook\/[\w-]{20,}/g, // Feishu's and Lark's bot webhooks: the URL is the credential.
  "zhipu-api-key": /\b[a-f0-9]{32}\.[A-Za-z0-9]{16}\b/g, // Zhipu (GLM): an id in hex, a dot, a secret.
  "baidu-api-key": /\bbce-v3\/ALTAK-[A-Za-z0-9]{10,}\/[a-f0-9]{32,}\b/g, // Baidu Qianfan's API key.
  "github-add-mask": [/(::add-mask::)([^\s"'\\]+)/g], // what a GitHub Actions step masks is a secret by its own word
  "fcm-server-key": /\bAAAA[\w-]{7}:APA91b[\w-]{100,}/g, // Firebase Cloud Messaging's legacy server key.
  "url-userinfo": [/(?<=[a-z0-9+.-])(:\/\/[^\s/?#@:"'<>]*:)([^\s/?#"'<>]+)(?=@)/gi], // A URL's `user:password@` (to the last `@` before the path: a password may hold one); a token as its user.
  "url-token-user": /(?<=[a-z0-9+.-]:\/\/)(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{32,}(?=@)/gi,
  authorization: [/\b((?:proxy-)?authorization["'`]?[ \t]*[:=][ \t]*["'`]?(?:(?:basic|bearer|token|digest|negotiate|ntlm|ssws)[ \t]+)?)(?!(?:basic|bearer|token|digest|negotiate|ntlm|ssws)\b(?!=)|[$%{<[])([\w-]+=(?:"[^"\r\n\\]*"|[^\s"'`,;\\]*)(?:[ \t]*,[ \t]*[\w-]+=(?:"[^"\r\n\\]*"|[^\s"'`,;\\]*))*|[^\s"'`,;]+)/gi], // An Authorization header's credentials after its scheme word: a token, or all its `name="value"` parameters.
  cookie: (text, hide = plain) => text.replace(COOKIE, (_m, head, set, pairs) => head + redactCookies(pairs, set !== undefined, hide)), // A `Cookie` or `Set-Cookie` header (or its JSON member): its `name=value` pairs, to the line's or string's end.
  bearer: [/\b((?:Bearer|SSWS)[ \t]+)((?=[\w.~+/=-]*\d)[\w.~+/=-]{8,})/gi], // A bearer (or Okta's SSWS) token anywhere, with a digit (`Bearer authentication` is a phrase).
  "smtp-auth": (text, hide = plain) => text.replace(SMTP_AUTH, (m, head: string, b64: string) => { // SMTP's `AUTH PLAIN <base64 of \0user\0password>`, and the password line after `334 UGFzc3dvcmQ6` ("Password:")
    try {
      return /^334/.test(head) || atob(b64).includes("\0") ? head + hide(b64) : m;
    } catch {
      return m;
    }
  }),
  basic: [/\b(Basic[ \t]+)([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])/gi, (b64) => userAndPassword(b64) ? b64 : undefined], // `Basic` credentials without their header: base64 that decodes to `user:password`.
  "user-option": [/(?<![\w-])((?:--user|-u)(?:[ \t]+|=)["']?(?![$%{<[])[^\s"':]*:["']?)(?!\d+(?:[\s"']|$)|[$%{<[]|\/\/)([^\s"']+)/g], // The password of curl's `-u user:password` (not a number, a variable, a placeholder or a URL's `//`).
  "secret-in-prose": [/\b((?:secret|password|passwd|passphrase|passcode|token|api[ _-]?key|credentials?)[ \t]+(?:is|was)[ \t]+(["'`]))([^\s"'`\\]{4,200})(?=\2)/gi, (v) => NO_SECRET.test(v) ? undefined : v], // A quoted value a sentence says is a secret: `the secret is "…"`.
  "secret-in-prose-unquoted": [SECRET_IN_PROSE_UNQUOTED, valued(false)],
  "secret-label": [[/(?<![A-Za-z0-9_\u0400-\u04ff])((?:(?:password|passwd|passphrase|passcode|secret(?:[ _-]?key)?|token|api[ _-]?key)[ \t]*(?:[：＝]|是|为|為)|(?:API[ \t]*(?:キー|키)|(?:API[ \t]*)?(?:密码|密碼|口令|密钥|密鑰|秘钥|私钥|私鑰|令牌|パスワード|トークン|秘密鍵|비밀번호|토큰|授权码|授權碼))[ \t\u3000]*(?:[:：=＝]|是|为|為|は|が|는|은|가|(?<=[ \t\u3000])|(?=[A-Za-z0-9]))|пароль[ \t]*[:：=＝])[ \t\u3000]*)("[^"\r\n]{1,200}"|'[^'\r\n]{1,200}'|「(?:(?!["'`\\])[!-~]){1,200}」|“(?:(?!["'`\\])[!-~]){1,200}”|(?:(?!["'`\\])[!-~]){4,200})/giu, /(?<=[A-Za-z0-9])((?:API[ \t]*)?(?:密码|密碼|口令|密钥|密鑰|秘钥|私钥|私鑰|令牌|パスワード|トークン|秘密鍵|비밀번호|토큰|授权码|授權碼)[ \t\u3000]*(?:[:：=＝]|是|为|為|は|が|는|은|가|(?<=[ \t\u3000])|(?=[A-Za-z0-9]))[ \t\u3000]*)("[^"\r\n]{1,200}"|'[^'\r\n]{1,200}'|「(?:(?!["'`\\])[!-~]){1,200}」|“(?:(?!["'`\\])[!-~]){1,200}”|(?:(?!["'`\\])[!-~]){4,200})/giu], valued(false, true)], // A value after a fullwidth `：`/`＝` (or a CJK "is") of an English secret word, or a CJK secret name (also glued to a word before it: `WiFi密码`) and `:`, "is", a blank or nothing; in 「」 or “” too.
  "sql-password": [/((?:\bIDENTIFIED(?:[ \t]+WITH[ \t]+\w+)?[ \t]+BY|\b(?:WITH|LOGIN|ENCRYPTED|UNENCRYPTED)[ \t]+PASSWORD|=[ \t]*PASSWORD[ \t]*\()[ \t]*(\\?['"]))([^'"\r\n\\]{1,200})(?=\2)/gi, valued(true)], // SQL's `IDENTIFIED BY '…'`, `WITH PASSWORD '…'`, `= PASSWORD('…')`
  "redis-auth": [/((?:(?<![\w.-])[\w.-]+:\d+|\bredis)(?:\[\d+\])?>[ \t]*AUTH[ \t]+(?:[^\s"'\\]+[ \t]+)?|(?:\bCONFIG[ \t]+SET[ \t]+|(?:(?<![^\r\n])|(?<=\\[nr]))[ \t]*)(?:requirepass|masterauth)[ \t]+)([^\s"'\\]+)/gi, valued(true)], // redis-cli's `AUTH [user] …` at its prompt, `requirepass …` in redis.conf or CONFIG SET
  "password-option": [[passwordOption(PASSWORD_OPTIONS), passwordOption(SECOND_PASSWORD_OPTIONS)], valued(true)],
  pgpass: [/(?<![^\r\n"'])([\w.*-]+:(?:\d+|\*):[^\s:"'\\]+:[^\s:"'\\]+:)([^\s:"'\\]+)(?=[ \t]*(?:[\r\n"]|$))/g, valued(true)], // A `.pgpass` line, `host:port:database:user:password` (or a string of it): the last field, ending it.
  "oracle-logon": [/\b((?:jdbc:oracle:(?:thin|oci):|(?:sqlplus|sqlldr|expdp|impdp|rman)(?:[ \t]+-\w+)*[ \t]+)[^\s/@:"']+\/)([^\s/@"'\\]+)(?=@)/gi], // Oracle's `user/password@` (a JDBC thin or OCI URL, `sqlplus`'s logon): the password.
  "go-sql-dsn": [/(?<![\w.-])([\w.-]+:)([^\s@:"'\\]+)(?=@(?:tcp6?|udp|unix)\()/g], // A Go SQL driver's DSN, `user:password@tcp(host)/db` (or `unix(…)`, `udp(…)`): the password.
  "aws-configure-prompt": [/\b(AWS (?:Secret Access Key|Session Token) \[[^\]\r\n]{0,64}\]:[ \t]*)([A-Za-z0-9/+=]{16,})/g], // What `aws configure` asks, answered: `AWS Secret Access Key [None]: …`.
  "securestring": [/\b(ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?["'])([^"'\r\n\\]{1,200})(?=["'])/gi], // PowerShell's `ConvertTo-SecureString "…" -AsPlainText`.
  "vault-init-key": [/\b((?:Unseal|Recovery)[ \t]+Key[ \t]+\d+:[ \t]*)([A-Za-z0-9+/]{20,}={0,2})/g], // What `vault operator init` prints: `Unseal Key 1: …`, `Recovery Key 1: …`.
  "secret-option": [/(?<![\w-])(--?(?<name>[A-Za-z][\w-]*)[ \t]+)('[^'\r\n]*'|"[^"\r\n]*"|[^\s"'`\\|;&]+)/g, (v, { name }) => secretName(name!) && secretValue(v, false) ? v : undefined], // A secret-named command-line option and the value after a blank (`--secret-key …`, `-auth user:…`).
  "login-call": [/(?<![\w-])((?:[A-Za-z]*(?:Basic|Digest)Auth|log_?[io]n|sign_?in|authenticate|auth[ \t]*=)[ \t]*\([ \t]*(?:"[^"\r\n\\]*"|'[^'\r\n\\]*'|[\w.]+)[ \t]*,[ \t]*["'])(?!\/)([^\s"'\\]{1,200})(?=["'][ \t]*[),])/gi, valued(false)], // A login call's password, its second argument after a user name: `ftp.login("admin", "…")`, `auth=("user", "…")`.
  "vault-kv": (text, hide = plain) => text.replace(VAULT_KV, (line) => line.replace(KV_PAIR, (m, head: string, value: string) => !/^[@-]/.test(value) && secretValue(value, true) ? head + hide(value) : m)), // `vault kv put|patch`'s `key=value` pairs: every value a secret (not `@file`, not `-`: stdin).
  "named-value": [/(?<![\w.-])((?<name>[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]*)+)[ \t]+(?:\|[ \t]*)?)([\w+/=~.-]{8,})(?![\w+/=~.-])/g, (v, { name }) => secretName(name!) && randomRun(v) ? v : undefined], // A key-like name (`snake_case`, `kebab-case`, `camelCase`), a blank, a generated-looking value: a table's row or a config command's pair.
  "here-string": (text, hide = plain) => text.replace(HERE_STRING, (m, value: string, at: number) => { // bash's `<<< …`: a command's input that names a secret before it
    const command = text.slice(Math.max(0, at - 200), at).split(/\\n|[\n;|&"]/).at(-1)!; // since the line's or the command's start
    return (SECRET_HINT_WORD.test(command) || /\bssh-add\b|\bsudo[ \t](?:.*[ \t])?(?:-[A-Za-z]*S|--stdin)\b/.test(command)) && secretValue(value, true) ? m.slice(0, -value.length) + hide(value) : m;
  }),
  "curl-cookie": (text, hide = plain) => text.replace(CURL_COOKIE, (_m, head, _q, pairs) => head + redactCookies(pairs, false, hide)), // curl's `-b`/`--cookie` with `name=value` pairs (not a cookie file), quoted or not.
  "config-set": [/\b((?:setx|set(?:[ \t]+-[A-Za-z]+)+|launchctl[ \t]+setenv|(?:npm|yarn|pnpm)[ \t]+config[ \t]+set|aws[ \t]+configure[ \t]+set|git[ \t]+config(?:[ \t]+--(?:global|local|system))?|(?<gh>gh[ \t]+secret[ \t]+set|dotnet[ \t]+user-secrets[ \t]+set))[ \t]+(\\?"?)(?<name>[^\s"=\\]+)\3(?:[ \t]+(?:-b|--body))?[ \t]+)(\\"[^"\r\n]*\\"|'[^'\r\n]*'|"[^"\r\n]*"|[^\s"'`\\]+)/g, (v, { gh, name }) => (gh || secretName(name!)) && secretValue(v, true) ? v : undefined], // A command that sets a named value (fish's `set -x` too; `gh secret set`, whose every value is a secret).
  "quoted-argument": [[/(?<![\w-])(\\?["'](?<name>[A-Za-z_][\w.-]*)\\?["'][ \t]*,[ \t]*(\\?["']))([^"'\r\n\\]{1,200})(?=\3[ \t]*[),\]])/g, /(?<![\w-])((?<name>[A-Za-z_]\w*)[ \t]*\([ \t]*(\\?["']))([^"'\r\n\\]{1,200})(?=\3[ \t]*\))/g], (v, { name }) => secretName(name!) && secretValue(v, false) ? v : undefined], // `Setenv("DB_PASSWORD", "…")`, `setPassword("…")`
  "terraform-sensitive": [/(\\?"sensitive\\?"[ \t]*:[ \t]*true[ \t]*,[^{}]{0,300}?\\?"value\\?"[ \t]*:[ \t]*\\?")([^"\\\r\n]{1,400})(?=\\?")/g, valued(true)], // what `terraform output -json` marks sensitive
  "name-value": [[/(\bname:[ \t]*(\\?["']?)(?<name>[\w.-]+)\2[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]*(?:-[ \t]+)?value:[ \t]*)("[^"\r\n]*"|'[^'\r\n]*'|\\"[^"\r\n]*\\"|[^\s"'#\\]+)/g, /(\\?"name\\?"[ \t]*:[ \t]*\\?"(?<name>[\w.-]+)\\?"[ \t]*,[ \t]*\\?"value\\?"[ \t]*:[ \t]*\\?")([^"\\\r\n]{1,200})(?=\\?")/g], (v, { name }) => secretName(name!) && secretValue(v, true) ? v.replace(/^\\?(["'])(.*)\\?\1$/, "$2") : undefined], // a list of `name:`/`value:` pairs (a Kubernetes container's env, an ECS task's `{"name", "value"}`)
  "variable-default": [/(\$\{(?<name>[A-Za-z_][\w.]*):-?)([^-}\s"'$\\][^}\s"'$\\]{0,199})(?=\})/g, (v, { name }) => secretName(name!) && secretValue(v, true) ? v : undefined], // the default of a secret's variable: the shell's `${DB_PASSWORD:-…}`, Spring's `${DB_PASSWORD:…}`
  "c-define": [/(#[ \t]*define[ \t]+(?<name>\w+)[ \t]+(\\?"))([^"\r\n\\]{1,200})(?=\3)/g, (v, { name }) => secretName(name!) && secretValue(v, true) ? v : undefined], // C's `#define WIFI_PASSWORD "…"`
  "xml-element": [XML_SECRETS, (raw, { name }) => secretName(name!) && secretValue(raw.trim(), false) ? raw.trim() : undefined],
  "expect-send": (text, hide = plain) => text.replace(EXPECT_SEND, (m, head: string, value: string, tail: string, at: number) => { // expect's `send "…\\r"` answering a password prompt
    const prompt = text.slice(Math.max(0, at - 200), at).split(/\bexpect\b/).at(-1)!; // since the last `expect`
    return /assword|passphrase|passcode|secret|token|\bpin\b/i.test(prompt) && secretValue(value, true) ? head + hide(value) + tail : m;
  }),
  "mail-pass": (text, hide = plain) => text.replace(MAIL_PASS, (m, head: string, value: string, at: number) => // FTP's and POP3's `PASS …` on its line after a `USER` line (Jest's `PASS src/x.test.ts` has none)
    USER_LINE.test(text.slice(Math.max(0, at - 400), at)) && secretValue(value, true) ? head + hide(value) : m),
  "printed-secret": (text, hide = plain) => text.replace(PRINTED, (m, head: string, line: string, value: string) => // the line a command that prints a secret printed (`op read op://…/password`), the command in the same text
    printsSecret(line) && secretValue(value, true) ? head + hide(value) : m),
  "storage-account-key": (text, hide = plain) => text.replace(STORAGE_KEY, (m, head: string, key: string, at: number) => { // `az storage account keys list`: a 64-byte base64 `value` beside a `keyName`
    const [before, after] = [text.slice(Math.max(0, at - 400), at), text.slice(at, at + m.length + 400)];
    return /keyName/.test(before.slice(before.lastIndexOf("{") + 1) + after.slice(0, after.indexOf("}") >>> 0)) ? head + hide(key) : m;
  }),
  assignment: (text, hide = plain) => redactAssignments(text, hide),
};
const EXPECT_SEND = /\b(send(?:[ \t]+-[-\w]+)*[ \t]+")([^"\\\s]{1,200})([\r\n]*")/g;
const STORAGE_KEY = /("value"[ \t]*:[ \t]*")([A-Za-z0-9+/]{86}==)(?=")/g;
// deno-fmt-ignore: the shapes of the rules written as code
const [COOKIE, CURL_COOKIE] = [
  /\b((set-)?cookie["'`]?[ \t]*:[ \t]*["'`]?)([^\r\n"'`\\]+)/gi,
  /(?<![\w-])((?:-b|--cookie)(?:[ \t]+|=)(["']|))((?:(?!\2)[^\s"'\\])*=(?:(?!\2)[^\r\n"'\\])*)/g,
];
const [VAULT_KV, KV_PAIR] = [
  /\bvault[ \t]+kv[ \t]+(?:put|patch)\b(?:[^\r\n|;&\\]|\\(?![nrt]))*/g,
  /(?<=[ \t])(\w[\w.-]*=)('[^'\r\n]*'|"[^"\r\n]*"|[^\s"'`\\|;&]+)/g,
];
const SMTP_AUTH =
  /\b(AUTH[ \t]+PLAIN[ \t]+|334[ \t]+UGFzc3dvcmQ6[ \t]*\r?\n[ \t]*)([A-Za-z0-9+/]{4,}={0,2})(?![\w+/=])/gi;
const MAIL_PASS = /(?<![^\r\n])((?:[<>] |C: |---> )?PASS[ \t]+)([^\s"'\\]+)/gi;
const USER_LINE = /(?:^|[\r\n"]|\\n)(?:[<>] |C: |---> )?USER[ \t]+[^\s\\]+[ \t]*(?:\r?\n|(?:\\r)?\\n)/i;
const PRINTED =
  /\b((?<line>(?:op|security|bw|gopass|pass|vault|gcloud|aws|az|doppler|heroku)[ \t](?:[^\r\n|;&>\\]|\\(?![nr])){0,300})(?:\r?\n|(?:\\r)?\\n)[ \t]*)([^\s"'`\\]+)(?=[ \t]*(?:\r?\n|\\[rn]|\\?"|$))/g;
/** Commands that print a secret alone; one with a `field` group only when it names a secret. */
// deno-fmt-ignore: one command a line
const PRINTS_SECRET: readonly RegExp[] = [
  /^op[ \t]+read[ \t]+["']?op:\/\/\S*\/(?<field>[^\s/?'"]+)/,
  /^op[ \t]+item[ \t]+get\b.*[ \t]--fields?(?:[ \t]+|=)["']?(?:label=|type=)?(?<field>[^\s,'"]+)/,
  /^security[ \t]+find-(?:generic|internet)-password\b.*[ \t]-w(?![\w-])/,
  /^bw[ \t]+get[ \t]+(?:password|totp)\b/,
  /^(?:go)?pass[ \t]+show\b/,
  /^vault[ \t]+(?:kv[ \t]+get|read)\b.*[ \t]-field=["']?(?<field>[^\s'"]+)/,
  /^gcloud[ \t]+secrets[ \t]+versions[ \t]+access\b/,
  /^aws[ \t]+secretsmanager[ \t]+get-secret-value\b.*[ \t]--output[ \t=]+text\b/,
  /^az[ \t]+keyvault[ \t]+secret[ \t]+show\b.*[ \t](?:-o|--output)[ \t=]+tsv\b/,
  /^doppler[ \t]+secrets[ \t]+get\b.*[ \t]--plain\b/,
  /^heroku[ \t]+config:get[ \t]+(?<field>[^\s'"]+)/,
];
const printsSecret = (line: string) =>
  PRINTS_SECRET.some((re) => {
    const m = re.exec(line);
    return m !== null && (m.groups?.field === undefined || secretName(m.groups.field));
  });
const HERE_STRING = /<<<[ \t]*('[^'\r\n]*'|"[^"\r\n]*"|[^\s"'`\\|;&]+)/g;
/** Every credential rule by name, in the order they run. */
export const CREDENTIAL_RULES: Readonly<Record<string, Rule>> = Object.fromEntries(
  Object.entries(RULES).map(([name, r]): [string, Rule] => {
    if (typeof r === "function") return [name, r];
    const [shapes, pick = (raw: string) => raw] = r instanceof RegExp ? [r] : r;
    const res = [shapes].flat();
    if (r instanceof RegExp) return [name, (text, hide = plain) => text.replace(res[0], hide)];
    const replace = (text: string, re: RegExp, hide: Hide) =>
      text.replace(re, (m: string, head: string, ...rest: unknown[]) => {
        const groups = rest.at(-1), raw = m.slice(head.length);
        const secret = pick(raw, typeof groups === "object" ? groups as Record<string, string> : {});
        return secret === undefined ? m : head + raw.replace(secret, () => hide(secret));
      });
    return [name, (text, hide = plain) => res.reduce((out, re) => replace(out, re, hide), text)];
  }),
);

/** The rules that read the folded text: all but the two that fold. */
const FOLDED_RULES = Object.entries(CREDENTIAL_RULES)
  .filter(([name]) => name !== "invisible-characters" && name !== "disguised")
  .map(([, rule]) => rule);

/** Replaces every credential with `[REDACTED]` (the log, doctor and error texts use this too: scrubText). */
function redactCredentials(text: string, hide: Hide = plain): string {
  return redactWith(FOLDED_RULES, CREDENTIAL_RULES["invisible-characters"](text), hide);
}

/** The shortest secret learned for {@link redact}'s `seen`: shorter ones are too likely ordinary words. */
const MIN_LEARNED = 6;
const wordChar = (c: string | undefined) => c !== undefined && /\w/.test(c);
/** Whether `text[at, end)` stands bare: no word character glued to a word character at either end. */
const bareSpan = (text: string, at: number, end: number) =>
  !(wordChar(text[at]) && wordChar(text[at - 1])) && !(wordChar(text[end - 1]) && wordChar(text[end]));
/** `text` with the `spans` (sorted by start) replaced by one `[REDACTED]` per run of overlapping ones. */
function redactSpans(text: string, spans: readonly [number, number][]): string {
  let [out, from, end] = ["", 0, 0];
  for (const [at, to] of spans) {
    if (at >= end) out += text.slice(from, at) + REDACTED;
    end = from = Math.max(end, to);
  }
  return out + text.slice(from);
}

/** Every bare recurrence of a `seen` secret redacted: one pass, the secrets looked up by their first characters. */
function redactSeen(text: string, seen: ReadonlySet<string>): string {
  const byHead = Map.groupBy(seen, (s) => s.slice(0, MIN_LEARNED));
  const spans: [number, number][] = [];
  for (let at = 0; at + MIN_LEARNED <= text.length; at++) {
    for (const s of byHead.get(text.slice(at, at + MIN_LEARNED)) ?? []) {
      if (text.startsWith(s, at) && bareSpan(text, at, at + s.length)) spans.push([at, at + s.length]);
    }
  }
  return redactSpans(text, spans);
}

/** The odd bases of a print's two polynomial hashes modulo 2^32. */
const [B1, B2] = [0x01000193, 0x5bd1e995];
/** The most prints a session keeps (the newest). */
export const MAX_PRINTS = 64;
const printOf = (length: number, h1: number, h2: number) =>
  `${length}:${(h1 >>> 0).toString(36)}:${(h2 >>> 0).toString(36)}`;
/** A learned secret's print, kept instead of it: its length and two 32-bit polynomial hashes of its UTF-16 units. */
export function secretPrint(secret: string): string {
  let [h1, h2] = [0, 0];
  for (let i = 0; i < secret.length; i++) {
    h1 = (Math.imul(h1, B1) + secret.charCodeAt(i)) | 0;
    h2 = (Math.imul(h2, B2) + secret.charCodeAt(i)) | 0;
  }
  return printOf(secret.length, h1, h2);
}

function basePower(base: number, n: number): number {
  let r = 1;
  for (let i = 0; i < n; i++) r = Math.imul(r, base);
  return r;
}
/** A prints set parsed once: its first hashes by length (of lengths redaction learns), a table of their tops. */
type Parsed = { firsts: ReadonlyMap<number, ReadonlySet<number>>; tops: Uint8Array };
const parsedPrints = new WeakMap<ReadonlySet<string>, Parsed>();
function parse(prints: ReadonlySet<string>): Parsed {
  const known = parsedPrints.get(prints);
  if (known) return known;
  const [firsts, tops] = [new Map<number, Set<number>>(), new Uint8Array(1 << 16)];
  for (const p of prints) {
    const [length, h1] = p.split(":");
    const [n, first] = [Number(length), Number.parseInt(h1, 36) | 0];
    if (!(n >= MIN_LEARNED)) continue;
    firsts.set(n, (firsts.get(n) ?? new Set()).add(first));
    tops[first >>> 16] = 1;
  }
  const parsed = { firsts, tops };
  parsedPrints.set(prints, parsed);
  return parsed;
}

/** `text.slice(0, upTo)`, the bare recurrences of `prints`' secrets that start in it redacted. */
function redactPrintedHead(text: string, prints: ReadonlySet<string>, upTo: number): string {
  const { firsts, tops } = parse(prints);
  const fit = Int32Array.from([...firsts.keys()].filter((l) => l <= text.length)).sort().reverse(); // longest first
  const [outs, hashes] = [fit.map((l) => basePower(B1, l)), Array.from(fit, (l) => firsts.get(l)!)];
  const n = Math.min(text.length, upTo + (fit[0] ?? 0));
  const prefix = new Int32Array(n + 1); // prefix[i]: the first hash of text[0, i)
  for (let i = 0; i < n; i++) prefix[i + 1] = (Math.imul(prefix[i], B1) + text.charCodeAt(i)) | 0;
  const spans: [number, number][] = []; // by start, the longest first
  for (let at = 0; at < n && at < upTo; at++) {
    const from = prefix[at];
    for (let j = 0; j < fit.length; j++) {
      const end = at + fit[j];
      if (end > n) continue;
      const first = (prefix[end] - Math.imul(from, outs[j])) | 0;
      if (!tops[first >>> 16] || !hashes[j].has(first)) continue;
      if (prints.has(secretPrint(text.slice(at, end))) && bareSpan(text, at, end)) {
        spans.push([at, Math.min(end, upTo)]);
      }
    }
  }
  return redactSpans(text.slice(0, upTo), spans);
}

/** {@link redactPrintedHead} of a head growing until its result, trimmed, is longer than `keep` (or is whole). */
function redactPrinted(text: string, prints: ReadonlySet<string>, keep: number): string {
  for (let upTo = 2 * keep + 64;; upTo *= 2) {
    const head = redactPrintedHead(text, prints, upTo);
    if (upTo >= text.length || head.trim().length > keep) return head;
  }
}

/** The hider that learns each secret (unquoted as written, ≥ MIN_LEARNED) into `seen`. */
function learner(seen?: Set<string>): Hide {
  return !seen ? plain : (secret) => {
    let s = secret.trim();
    const quote = /^\\?["'`]/.exec(s)?.[0] ?? "";
    if (quote && s.endsWith(quote.at(-1)!)) s = s.slice(quote.length, -quote.length).trim();
    if (s.length >= MIN_LEARNED && !s.includes(REDACTED)) seen.add(s);
    return REDACTED;
  };
}

/**
 * A structured field's string (a JSON object's `key`): all of it when the key names a secret (`password`,
 * `apiKey`; a bare `key`, `pin`… when it looks generated) and it holds one, else {@link redact}ed.
 */
export function redactField(
  key: string,
  value: string,
  seen?: Set<string>,
  prints?: ReadonlySet<string>,
): string {
  const weak = WEAK_KEYS.has(key.toLowerCase());
  if ((weak || secretName(key)) && secretValue(value.trim(), true, weak)) return learner(seen)(value);
  return redact(value, seen, prints);
}

/**
 * Private spans, then credentials, out; each secret found (and private span, and its lines) is learned into `seen`
 * and redacted wherever it recurs bare, as is each of `prints`; with `keep`, maybe only a prefix longer than `keep`.
 */
export function redact(
  text: string,
  seen?: Set<string>,
  prints?: ReadonlySet<string>,
  keep = Infinity,
): string {
  const hide = learner(seen);
  const out = redactCredentials(stripPrivate(text, hide), hide);
  const again = seen ? redactSeen(out, seen) : out;
  return prints?.size ? redactPrinted(again, prints, keep) : again;
}

/** A URL — or any text naming URLs — with every `user:password@` removed (for messages and logs). */
export const withoutUserinfo = (text: string): string => text.replace(/\/\/[^/?#\s"'<>]*@/g, "//");
/** Text with every secret masked: the given ones, every credential, bearer tokens and URL userinfo. */
export function scrubText(text: string, secrets: readonly string[] = []): string {
  const s = secrets.filter((x) => x.length >= 4).reduce((t, x) => t.replaceAll(x, "***"), text);
  return withoutUserinfo(redactCredentials(s).replace(/\b(Bearer)\s+[^\s"',;]+/gi, "$1 ***"));
}

const SECRET_KEY = /^(api[_-]?key|(access[_-]?)?token|secret|password|authorization|bearer|credentials?)$/i;

/** Deep copy of `value` with secret-looking fields and any of `secrets` masked. */
export function scrub(value: unknown, secrets: readonly string[] = [], depth = 0): unknown {
  if (typeof value === "string") return scrubText(value, secrets);
  if (value === null || typeof value !== "object" || depth > 8) return value;
  if (value instanceof Error) return { name: value.name, message: scrub(value.message, secrets, depth + 1) };
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets, depth + 1));
  const masked = (k: string, v: unknown) =>
    SECRET_KEY.test(k) && !([undefined, "", true, false] as unknown[]).includes(v);
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, masked(k, v) ? "***" : scrub(v, secrets, depth + 1)]),
  );
}
