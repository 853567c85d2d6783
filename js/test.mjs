// Runs the unit tests of the widgets' pure logic (js/test/*.test.ts) with Node's own test
// runner. Node 18 and 20 (Debian's and this project's) cannot run TypeScript, so esbuild —
// the bundler the build already uses — compiles each test with its imports into a
// temporary directory first. Usage: node test.mjs [node --test options]
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const tests = readdirSync(join(here, "test")).filter((name) => name.endsWith(".test.ts")).sort();
const outdir = mkdtempSync(join(tmpdir(), "neta-nb-js-tests-"));
try {
  await esbuild.build({
    entryPoints: tests.map((name) => resolve(here, "test", name)),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node18",
    outdir,
    outExtension: { ".js": ".mjs" },
    loader: { ".css": "empty" }, // components import their CSS; Node has no use for it
    // CommonJS dependencies (happy-dom's) require Node's own modules at run time.
    banner: { js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);' },
    logLevel: "warning",
  });
  const files = tests.map((name) => join(outdir, name.replace(/\.ts$/, ".mjs")));
  const run = spawnSync(process.execPath, ["--test", ...process.argv.slice(2), ...files], { stdio: "inherit" });
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
