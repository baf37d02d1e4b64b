// Drives the OpenClaw plugin's before_prompt_build handler directly, without OpenClaw, on
// workspaces an agent could have shaped (tests/test_e2e_openclaw.py runs it with the hosts'
// Node). Usage: node plugin_probe.mjs <plugin entry> <scratch folder>
// Prints one JSON object: for each case, what the handler returned and what it logged.

import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [entry, root] = process.argv.slice(2);
const { beforePromptBuild } = await import(pathToFileURL(entry).href);

const good = {
  version: 1,
  block: "[Session Scratchpad - x]\nhi\n[End Scratchpad]\n",
  guidance: "G",
  expires_ms: Date.now() + 60_000,
};
const outside = path.join(root, "outside");
mkdirSync(outside);
writeFileSync(path.join(outside, "prefix.json"), JSON.stringify(good));

// Each case: a workspace whose state folder the function shapes.
const shapes = {
  fresh: (state) => writeFileSync(path.join(state, "prefix.json"), JSON.stringify(good)),
  stale: (state) =>
    writeFileSync(path.join(state, "prefix.json"), JSON.stringify({ ...good, expires_ms: Date.now() - 1 })),
  missing: () => {},
  linked_file: (state) => symlinkSync(path.join(outside, "prefix.json"), path.join(state, "prefix.json")),
  fifo: (state) => execFileSync("mkfifo", [path.join(state, "prefix.json")]),
  junk: (state) => writeFileSync(path.join(state, "prefix.json"), "{not json"),
  wrong_version: (state) =>
    writeFileSync(path.join(state, "prefix.json"), JSON.stringify({ ...good, version: 2 })),
  huge: (state) => writeFileSync(path.join(state, "prefix.json"), " ".repeat(2 * 1024 * 1024)),
};

const workspaces = {};
for (const [name, shape] of Object.entries(shapes)) {
  const workspace = path.join(root, name);
  mkdirSync(path.join(workspace, ".scratchpad"), { recursive: true });
  shape(path.join(workspace, ".scratchpad"));
  workspaces[name] = workspace;
}
workspaces.linked_folder = path.join(root, "linked_folder");
mkdirSync(workspaces.linked_folder);
symlinkSync(outside, path.join(workspaces.linked_folder, ".scratchpad"));

function probe(config, ctx) {
  const logged = [];
  const result = beforePromptBuild(config, ctx, (message) => logged.push(message));
  return { result, logged };
}

const out = {};
for (const [name, workspace] of Object.entries(workspaces)) out[name] = probe({ workspace }, {});
out.from_context = probe({}, { workspaceDir: workspaces.fresh });
out.relative = probe({ workspace: "fresh" }, { workspaceDir: "fresh" });
console.log(JSON.stringify(out));
