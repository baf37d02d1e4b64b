// scratchpad-assembler for OpenClaw: adds the fresh scratchpad before each prompt and gives
// the agent its `scratchpad` tool.
//
// before_prompt_build: reads `<workspace>/.scratchpad/prefix.json`, the ready block that every
//   `assemble` run and every change of the agent's sections writes (assembler/pad/publish.py),
//   and returns its `block` as prependContext while it is fresh; and, on every turn, the
//   guidance shipped beside this file (`guidance.md`) as prependSystemContext. No Python
//   starts: one small file read (well under a millisecond). Any problem (no file yet, a link,
//   bad JSON) adds no block and is logged once: the turn always goes on.
// The prompt hand-off: when a daemon serves the workspace, before_prompt_build first sends it
//   the prompt being answered over `<workspace>/.scratchpad/daemon.sock` (one JSON line each
//   way, `{"op": "prompt", ...}`; assembler/daemon/control.py) and sends the block it answers,
//   assembled with that prompt counted as the newest human message; no answer within
//   `promptBudgetMs` (150 ms by default, from connecting to the answer), or no socket at all
//   (nothing is waited for then), and prefix.json is read as above. The answer is checked as
//   prefix.json is (fresh at most MAX_AGE_MS, at most MAX_BLOCK_CHARS sent): a listener the
//   agent planted there could say no more than the file it can write anyway.
// scratchpad tool: runs `<assemble> tool - --workspace <workspace>` with the call as JSON on
//   stdin (execFile, an argument array, never a shell) and returns its JSON answer; a call
//   the agent got wrong comes back as a tool error with the program's message.
//
// Delivery receipts: for each prompt, before_prompt_build appends one line to
//   `<workspace>/.scratchpad/deliveries.jsonl` (assembler/delivery/sent.py's record): when,
//   the host, the session's id and the digest of what it put before the prompt (16 hex digits
//   of the SHA-256 of the text without trailing white space; null when it added nothing).
//   OpenClaw's trace of the prompts it submitted says what reached the model
//   (assembler/hosts/openclaw/receipts.py). Appended only, never through a link; a record that
//   cannot be written is logged once and the turn goes on.
//
// The workspace is the plugin config's `workspace`, else the agent's workspace as OpenClaw
// gives it to the hook or tool; `assemble` (an absolute path) comes from the config only.
// `assemble setup openclaw` prints the commands that install, configure and enable this.
// What the agent writes is hostile input, and the agent can write prefix.json: nothing is read
// through a link or from a FIFO, nothing but the state folder's own file is read, the system
// prompt never comes from the workspace (the guidance is this package's own text), a block is
// fresh at most MAX_AGE_MS after it was written (whatever `expires_ms` says; a block written in
// the future is stale), and at most MAX_BLOCK_CHARS of it are sent.

import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import net from "node:net";
import path from "node:path";

export const PLUGIN_ID = "scratchpad-assembler";
export const STATE_DIR = ".scratchpad";
export const READY_NAME = "prefix.json";
const READY_VERSION = 1;
const MAX_READY_BYTES = 1024 * 1024; // the block is a few KiB; anything this big is not ours
// The longest a block stays fresh after it was written: the program's default TTL
// (`output.ttl_minutes`). The daemon and the printed cron job rewrite the block well within it.
export const MAX_AGE_MS = 30 * 60 * 1000;
// The most of a block sent: the default caps (2,600 tokens, about 10,400 characters of text)
// and a few KiB for headings and the header and footer lines.
export const MAX_BLOCK_CHARS = 16 * 1024;
const TOOL_TIMEOUT_MS = 30_000;
const MAX_TOOL_OUTPUT = 1024 * 1024;
const MAX_LOGGED = 50; // distinct problems logged; after that, silence
export const SOCKET_NAME = "daemon.sock";
// The daemon's lock (assembler/daemon/lock.py): a process holds a flock on it while it serves.
export const LOCK_NAME = "daemon.lock";
const PROC_LOCKS = "/proc/locks";
// The wait for the daemon's answer to a prompt, in all; `promptBudgetMs` in the config.
export const PROMPT_BUDGET_MS = 150;
const MAX_PROMPT_BUDGET_MS = 10_000;
// What a prompt request carries of the prompt: its head and tail (daemon/control.py's sizes).
const PROMPT_HEAD_CHARS = 2500;
const PROMPT_TAIL_CHARS = 2500;
const ELISION = "\n[…]\n";
const MAX_ANSWER_BYTES = 1024 * 1024;
const MAX_SESSION_CHARS = 200;
// The record of what before_prompt_build handed each session (assembler/delivery/sent.py): cut
// to its newest lines when it grows past its size, as the program cuts it.
export const SENT_NAME = "deliveries.jsonl";
const SENT_MAX_BYTES = 512 * 1024;
const SENT_KEPT_LINES = 2000;
// The characters Python's str.rstrip() takes off (str.isspace), which the digest leaves out.
const PY_SPACE = /[\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

// The tool's name, description and JSON schema: a copy of what `assemble mcp` offers.
const TOOL = JSON.parse(readFileSync(new URL("./scratchpad-tool.json", import.meta.url), "utf8"));
// The system-prompt guidance: `assemble guidance` of the default config, shipped with the
// plugin (tests/test_hostile_hosts.py keeps it equal to the template's render).
export const GUIDANCE = readFileSync(new URL("./guidance.md", import.meta.url), "utf8").replace(/\n+$/, "");

/**
 * Given a workspace (absolute), return its ready block: {block, updated, expires_ms, ...}.
 * Throw an Error naming the file when it is missing, a link, not a regular file, too large,
 * or not a ready block of the version this plugin reads.
 */
export function readReady(workspace) {
  const folder = path.join(workspace, STATE_DIR);
  const info = lstatSync(folder);
  if (!info.isDirectory()) {
    throw new Error(`${folder} is not a folder (a link?); the plugin reads nothing through it`);
  }
  const file = path.join(folder, READY_NAME);
  let fd;
  try {
    // O_NOFOLLOW: a link is refused, not followed; O_NONBLOCK: a FIFO cannot hang the turn.
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (error.code === "ELOOP") {
      throw new Error(`${file} is a symbolic link; the plugin reads nothing through a link`);
    }
    throw error;
  }
  let text;
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${file} is not a regular file`);
    if (stat.size > MAX_READY_BYTES) throw new Error(`${file} is larger than ${MAX_READY_BYTES} bytes`);
    text = readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
  let ready;
  try {
    ready = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not JSON (${error.message}); run \`assemble --once\``);
  }
  if (
    ready === null ||
    typeof ready !== "object" ||
    ready.version !== READY_VERSION ||
    typeof ready.block !== "string" ||
    typeof ready.updated !== "string" ||
    !Number.isFinite(Date.parse(ready.updated)) ||
    !Number.isFinite(ready.expires_ms)
  ) {
    throw new Error(`${file} is not a ready block of version ${READY_VERSION}; run \`assemble --once\``);
  }
  return ready;
}

/**
 * Given a ready block and the clock (ms since 1970), return until when (ms) its block may be
 * sent: its `expires_ms`, but never more than MAX_AGE_MS after its `updated`; 0 (stale) when
 * `updated` is in the future, which no writer on this machine's clock does.
 */
export function freshUntil(ready, nowMs) {
  const updated = Date.parse(ready.updated);
  if (!Number.isFinite(updated) || updated > nowMs) return 0;
  return Math.min(ready.expires_ms, updated + MAX_AGE_MS);
}

/**
 * Given a block, return it cut to at most MAX_BLOCK_CHARS characters (at a line end where one
 * keeps most of it), saying so on its last line; a block within the limit is returned as it is.
 */
export function boundedBlock(block) {
  if (block.length <= MAX_BLOCK_CHARS) return block;
  const note = `\n[scratchpad cut: ${block.length} characters, more than the ${MAX_BLOCK_CHARS} sent]\n`;
  let cut = block.slice(0, MAX_BLOCK_CHARS - note.length);
  const line = cut.lastIndexOf("\n");
  if (line >= cut.length * 0.8) cut = cut.slice(0, line);
  // A cut between the halves of a surrogate pair would leave a lone half.
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return cut + note;
}

/**
 * Given a ready block (or null when there is none to read) and the clock (ms since 1970),
 * return what before_prompt_build adds: this package's guidance as system context on every
 * turn (so the system prompt, which the provider caches, stays byte-identical whether the
 * block is fresh or not, and the workspace never writes it), and the block, bounded, before
 * the prompt only while it is fresh.
 */
export function promptAdditions(ready, nowMs) {
  const additions = {};
  if (GUIDANCE.trim()) additions.prependSystemContext = GUIDANCE;
  if (ready && ready.block.trim()) {
    const until = freshUntil(ready, nowMs);
    // Silence would read as "nothing new": a stale block is one line saying since when.
    additions.prependContext =
      nowMs < until ? boundedBlock(ready.block) : staleLine(until || ready.expires_ms);
  }
  return additions;
}

/** Given when the block stopped being fresh (ms since 1970), return the line said instead. */
export function staleLine(sinceMs) {
  const since = Number.isFinite(sinceMs) && sinceMs > 0 ? new Date(sinceMs).toISOString() : "unknown";
  return `[Scratchpad stale since ${since.replace("T", " ").slice(0, 16)} UTC; the assembler is not keeping it fresh: its content is not shown.]`;
}

/** Given the plugin config and a hook or tool context, return the workspace, or undefined. */
export function resolveWorkspace(config, ctx) {
  const configured = typeof config?.workspace === "string" ? config.workspace.trim() : "";
  const candidate = configured || ctx?.workspaceDir;
  if (typeof candidate !== "string" || !path.isAbsolute(candidate)) return undefined;
  return path.resolve(candidate);
}

/**
 * Given the plugin config, the hook context, a logger of problems and the clock, return the
 * before_prompt_build result: the guidance, and the block while it is fresh ({} without a
 * workspace). Never throws.
 */
export function beforePromptBuild(config, ctx, report, nowMs = Date.now()) {
  const workspace = resolveWorkspace(config, ctx);
  if (workspace === undefined) {
    report(
      "no workspace: set plugins.entries.scratchpad-assembler.config.workspace to its absolute " +
        "path (`assemble setup openclaw` prints the command)",
    );
    return {};
  }
  let ready = null;
  try {
    ready = readReady(workspace);
  } catch (error) {
    const hint = error?.code === "ENOENT" ? " (no scratchpad yet: run `assemble --once` or the daemon)" : "";
    report(`${error?.message ?? error}${hint}`);
  }
  if (ready !== null && ready.block.length > MAX_BLOCK_CHARS) {
    report(`the scratchpad block is ${ready.block.length} characters; only ${MAX_BLOCK_CHARS} are sent`);
  }
  if (ready !== null && nowMs >= freshUntil(ready, nowMs)) {
    report("the scratchpad is stale: is the daemon or the cron job running? (`assemble check`)");
  }
  return promptAdditions(ready, nowMs);
}

/** Given a before_prompt_build event, return what the human typed ("" when none is given). */
export function promptOf(event) {
  const current = event?.currentUserMessage;
  if (typeof current === "string" && current.trim()) return current;
  return typeof event?.prompt === "string" ? event.prompt : "";
}

/** Given a prompt, return what a prompt request carries of it: its head and tail. */
export function clipPrompt(text) {
  if (text.length <= PROMPT_HEAD_CHARS + ELISION.length + PROMPT_TAIL_CHARS) return text;
  let head = text.slice(0, PROMPT_HEAD_CHARS);
  let tail = text.slice(-PROMPT_TAIL_CHARS);
  // No lone half of a surrogate pair at either cut.
  if (/[\ud800-\udbff]$/.test(head)) head = head.slice(0, -1);
  if (/^[\udc00-\udfff]/.test(tail)) tail = tail.slice(1);
  return head + ELISION + tail;
}

/** Given the plugin config, return the prompt budget in ms (PROMPT_BUDGET_MS unless set). */
export function promptBudget(config) {
  const value = config?.promptBudgetMs;
  if (!Number.isFinite(value) || value < 0) return PROMPT_BUDGET_MS;
  return Math.min(value, MAX_PROMPT_BUDGET_MS);
}

/**
 * Given an answer line's parsed JSON, return it when it is a fresh prompt answer ({block,
 * digest, updated, expires_ms}), else null.
 */
export function checkedAnswer(answer, nowMs) {
  if (
    answer === null ||
    typeof answer !== "object" ||
    answer.ok !== true ||
    typeof answer.block !== "string" ||
    typeof answer.updated !== "string" ||
    !Number.isFinite(Date.parse(answer.updated)) ||
    !Number.isFinite(answer.expires_ms)
  ) {
    return null;
  }
  return nowMs < freshUntil(answer, nowMs) ? answer : null;
}

/**
 * Given the state folder, return whether a process holds the daemon's lock, as the kernel's
 * table of locks says (Linux's /proc/locks: a flock on the lock file's device and inode); true
 * where there is no such table, the socket's own checks then standing alone.
 */
export function lockHeld(folder, table = PROC_LOCKS) {
  let info;
  try {
    info = lstatSync(path.join(folder, LOCK_NAME), { bigint: true });
  } catch {
    return false;
  }
  if (!info.isFile()) return false;
  let text;
  try {
    text = readFileSync(table, "latin1");
  } catch {
    return true;
  }
  // glibc's dev_t: the major number in bits 8-19 and 32-63, the minor in bits 0-7 and 20-31.
  const dev = info.dev;
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  const hex = (n) => n.toString(16).padStart(2, "0");
  const wanted = `${hex(major)}:${hex(minor)}:${info.ino}`;
  // "1: FLOCK  ADVISORY  WRITE 3013 fe:00:2146480 0 EOF"; a waiter's line has "->"
  return text.split("\n").some((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[1] === "FLOCK" && fields[5] === wanted;
  });
}

/**
 * Given a workspace (absolute), a prompt request ({host, session, prompt, length}) and a
 * budget in ms, resolve to the daemon's answer (see `checkedAnswer`), or to null: no socket
 * (at once), not a socket of this user, no connection or no answer within the budget, an
 * answer that is not one, or the daemon declining. Never rejects.
 */
export function askDaemon(workspace, request, budgetMs) {
  const folder = path.join(workspace, STATE_DIR);
  let dirFd;
  try {
    const info = lstatSync(path.join(folder, SOCKET_NAME));
    const uid = typeof process.getuid === "function" ? process.getuid() : info.uid;
    // One link only: a hard link to another workspace's socket would send the prompt there.
    if (!info.isSocket() || info.uid !== uid || info.nlink !== 1) return Promise.resolve(null);
    if (!lockHeld(folder)) return Promise.resolve(null); // a listener, but no daemon
    // Through a descriptor of the folder: never through a link, and a socket's address holds
    // at most 107 bytes, which a workspace's path may not.
    dirFd = openSync(folder, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    return Promise.resolve(null); // no daemon: nothing to wait for
  }
  return new Promise((resolve) => {
    let done = false;
    let received = Buffer.alloc(0);
    const socket = net.createConnection({ path: `/proc/self/fd/${dirFd}/${SOCKET_NAME}` });
    const finish = (value) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      closeSync(dirFd);
      resolve(value);
    };
    const timer = setTimeout(() => finish(null), budgetMs);
    socket.on("error", () => finish(null));
    socket.on("close", () => finish(null));
    socket.on("connect", () => socket.write(JSON.stringify({ op: "prompt", ...request }) + "\n"));
    socket.on("data", (chunk) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf(0x0a);
      if (end < 0) {
        if (received.length > MAX_ANSWER_BYTES) finish(null);
        return;
      }
      let answer = null;
      try {
        answer = JSON.parse(received.subarray(0, end).toString("utf8"));
      } catch {
        answer = null;
      }
      finish(checkedAnswer(answer, Date.now()));
    });
  });
}

/**
 * Given what before_prompt_build puts before a prompt, return its digest as the program keeps
 * it (assembler/delivery/sent.py's text_digest): 16 hex digits of the SHA-256 of its UTF-8
 * without trailing white space.
 */
export function textDigest(text) {
  let end = text.length;
  while (end > 0 && PY_SPACE.test(text[end - 1])) end -= 1;
  return createHash("sha256").update(text.slice(0, end), "utf8").digest("hex").slice(0, 16);
}

/** Given the clock (ms since 1970), return it as the record writes times: ISO, UTC, in ms. */
export function recordTime(nowMs) {
  return new Date(nowMs).toISOString().replace(/Z$/, "+00:00");
}

/**
 * Given a workspace (absolute), the session's id, what before_prompt_build put before its
 * prompt (undefined or "" for nothing) and the clock, append the prompt's line to
 * `.scratchpad/deliveries.jsonl`; cut the record to its newest lines when it has grown past
 * its size. Throw when it cannot be written (the caller logs it and goes on): the state
 * folder missing or a link, the record a link or not a regular file.
 */
export function recordDelivery(workspace, session, prepended, nowMs = Date.now()) {
  const folder = path.join(workspace, STATE_DIR);
  if (!lstatSync(folder).isDirectory()) {
    throw new Error(`${folder} is not a folder (a link?); the plugin writes nothing through it`);
  }
  const file = path.join(folder, SENT_NAME);
  const line = {
    at: recordTime(nowMs),
    host: "openclaw",
    session,
    sent: typeof prepended === "string" && prepended ? textDigest(prepended) : null,
  };
  let fd;
  try {
    // Appended only; O_NOFOLLOW: never through a link; O_NONBLOCK: a FIFO cannot hang the turn.
    const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;
    fd = openSync(file, flags | constants.O_NONBLOCK, 0o644);
  } catch (error) {
    if (error.code === "ELOOP") {
      throw new Error(`${file} is a symbolic link; the plugin writes nothing through a link`);
    }
    throw error;
  }
  let size;
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${file} is not a regular file`);
    writeSync(fd, JSON.stringify(line) + "\n");
    size = fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
  if (size > SENT_MAX_BYTES) keepNewestLines(folder, file);
}

/**
 * Given the state folder and the record in it, replace the record by its newest lines (of its
 * last SENT_MAX_BYTES only: a record grown huge costs no more to cut).
 */
function keepNewestLines(folder, file) {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  let tail;
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return;
    const start = Math.max(stat.size - SENT_MAX_BYTES, 0);
    tail = Buffer.alloc(stat.size - start);
    let got = 0;
    while (got < tail.length) {
      const read = readSync(fd, tail, got, tail.length - got, start + got);
      if (read === 0) break;
      got += read;
    }
    tail = tail.subarray(0, got);
    // Cut into a line: the part before its first line end is not a whole line.
    if (start > 0) tail = tail.subarray(tail.indexOf(0x0a) + 1);
  } finally {
    closeSync(fd);
  }
  const lines = tail.toString("utf8").split("\n").filter((line) => line);
  const kept = lines.slice(-SENT_KEPT_LINES).join("\n") + "\n";
  const temp = path.join(folder, `.${SENT_NAME}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const out = openSync(temp, flags, 0o644);
  try {
    writeSync(out, kept);
  } finally {
    closeSync(out);
  }
  try {
    renameSync(temp, file); // the record itself is replaced, never what a link names
  } catch (error) {
    unlinkSync(temp);
    throw error;
  }
}

/**
 * Given the plugin config, the hook context, what before_prompt_build returns, a logger of
 * problems and the clock, record the prompt's delivery (`recordDelivery`) when there is a
 * workspace and a session; a record that cannot be written is logged. Never throws.
 */
export function noteDelivery(config, ctx, additions, report, nowMs = Date.now()) {
  const workspace = resolveWorkspace(config, ctx);
  const session = typeof ctx?.sessionId === "string" ? ctx.sessionId : "";
  if (workspace === undefined || !session || session.length > MAX_SESSION_CHARS) return;
  try {
    recordDelivery(workspace, session, additions?.prependContext, nowMs);
  } catch (error) {
    // No state folder yet: reading the block said so already.
    if (error?.code !== "ENOENT") report(`cannot record the delivery: ${error?.message ?? error}`);
  }
}

/**
 * Given the plugin config, the before_prompt_build event and context, a logger of problems
 * and the clock, resolve to the before_prompt_build result (`buildPrompt`), after recording
 * what it puts before the prompt (`noteDelivery`). Never rejects.
 */
export async function promptBuild(config, event, ctx, report, nowMs = Date.now()) {
  let additions = {};
  try {
    additions = await buildPrompt(config, event, ctx, report, nowMs);
  } finally {
    noteDelivery(config, ctx, additions, report, nowMs);
  }
  return additions;
}

/**
 * Given the plugin config, the before_prompt_build event and context, a logger of problems
 * and the clock, resolve to the before_prompt_build result: the block the daemon answers with
 * the prompt counted, when it answers within the budget, else `beforePromptBuild`'s. Never
 * rejects.
 */
export async function buildPrompt(config, event, ctx, report, nowMs = Date.now()) {
  const workspace = resolveWorkspace(config, ctx);
  const prompt = promptOf(event);
  if (workspace !== undefined && prompt.trim()) {
    const session = typeof ctx?.sessionId === "string" ? ctx.sessionId.slice(0, MAX_SESSION_CHARS) : "";
    const budget = promptBudget(config);
    const request = {
      host: "openclaw",
      session: session || null,
      prompt: clipPrompt(prompt),
      length: prompt.length,
      wait_ms: Math.round(budget),
    };
    const answer = await askDaemon(workspace, request, budget);
    if (answer !== null && answer.block.trim()) {
      const additions = {};
      if (GUIDANCE.trim()) additions.prependSystemContext = GUIDANCE;
      additions.prependContext = boundedBlock(answer.block);
      return additions;
    }
  }
  return beforePromptBuild(config, ctx, report, nowMs);
}

/**
 * Given this install's `assemble`, the workspace and a tool call (an object), run
 * `assemble tool - --workspace W` with the call on stdin and resolve to {text, answer}: its
 * JSON answer as printed and parsed. Reject when it prints no JSON answer (it could not
 * start, crashed, or timed out).
 */
export function runAssembleTool(assemble, workspace, call, { signal, timeoutMs = TOOL_TIMEOUT_MS } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(
      assemble,
      ["tool", "-", "--workspace", workspace],
      { cwd: workspace, timeout: timeoutMs, maxBuffer: MAX_TOOL_OUTPUT, signal, encoding: "utf8" },
      (error, stdout, stderr) => {
        const text = String(stdout ?? "").trim();
        let answer;
        try {
          answer = JSON.parse(text);
        } catch {
          answer = undefined;
        }
        // Exit 0 with ok: true, or exit 1 with ok: false (a call the agent got wrong).
        if (answer !== null && typeof answer === "object" && typeof answer.ok === "boolean") {
          resolve({ text, answer });
          return;
        }
        const why = [error?.message, String(stderr ?? "").trim().slice(-2000)].filter(Boolean);
        reject(new Error(`\`${assemble} tool\` gave no answer: ${why.join(": ") || "no output"}`));
      },
    );
    child.stdin.on("error", () => {}); // it may exit before reading: the callback reports that
    child.stdin.end(JSON.stringify(call ?? {}));
  });
}

/** Given the plugin config, a tool context and a logger of problems, return the tool, or null
 * (not offered) when the config names no absolute `assemble` or there is no workspace. */
export function scratchpadTool(config, ctx, report) {
  const assemble = typeof config?.assemble === "string" ? config.assemble : "";
  const workspace = resolveWorkspace(config, ctx);
  if (!path.isAbsolute(assemble) || workspace === undefined) {
    report(
      "the scratchpad tool is off: set plugins.entries.scratchpad-assembler.config.assemble " +
        "(the absolute path of `assemble`) and .workspace (`assemble setup openclaw` prints both)",
    );
    return null;
  }
  return {
    name: TOOL.name,
    label: TOOL.label,
    description: TOOL.description,
    parameters: TOOL.parameters,
    // Model-visible on every turn, as the guidance promises, rather than deferred behind
    // OpenClaw's Tool Search (where a direct call by name is "not found").
    catalogMode: "direct-only",
    async execute(_toolCallId, params, signal) {
      const { text, answer } = await runAssembleTool(assemble, workspace, params, { signal });
      if (!answer.ok) throw new Error(text); // OpenClaw shows a thrown error as the tool's error
      return { content: [{ type: "text", text }], details: answer };
    },
  };
}

/** Given OpenClaw's logger, return a function that logs each distinct problem once. */
export function reportOnce(logger) {
  const seen = new Set();
  return (message) => {
    if (seen.has(message) || seen.size >= MAX_LOGGED) return;
    seen.add(message);
    logger?.warn?.(`${PLUGIN_ID}: ${message}`);
  };
}

export default {
  id: PLUGIN_ID,
  name: "Scratchpad Assembler",
  description:
    "Adds the fresh SCRATCHPAD.md (mood, session, memories, the agent's sections) before each " +
    "prompt and gives the agent its scratchpad tool.",
  register(api) {
    const config = api.pluginConfig ?? {};
    const report = reportOnce(api.logger);
    api.on("before_prompt_build", (event, ctx) => promptBuild(config, event, ctx, report));
    api.registerTool((ctx) => scratchpadTool(config, ctx, report), { name: TOOL.name });
  },
};
