// Runs the unit tests of the widgets' pure logic (js/test/*.test.ts) with Node's own test
// runner. Node 18 and 20 (Debian's and this project's) cannot run TypeScript, so esbuild —
// the bundler the build already uses — compiles each test with its imports into a
// temporary directory first. Usage: node test.mjs [--tests DIR] [node --test options]
// (DIR: the folder of *.test.ts files, js/test by default; the JupyterLab extension's
// tests are js/labextension/test, their imports resolved from its own node_modules).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const options = process.argv.slice(2);
const at = options.indexOf("--tests");
const folder = at >= 0 ? resolve(options.splice(at, 2)[1]) : join(here, "test");
const tests = readdirSync(folder).filter((name) => name.endsWith(".test.ts")).sort();
const outdir = mkdtempSync(join(tmpdir(), "neta-nb-js-tests-"));
try {
  await esbuild.build({
    entryPoints: tests.map((name) => resolve(folder, name)),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node18",
    outdir,
    outExtension: { ".js": ".mjs" },
    loader: { ".css": "empty" }, // components import their CSS; Node has no use for it
    // CommonJS dependencies (happy-dom's, the extension's @lumino packages) require Node's
    // own modules at run time.
    banner: { js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);' },
    logLevel: "warning",
  });
  const files = tests.map((name) => join(outdir, name.replace(/\.ts$/, ".mjs")));
  const run = spawnSync(process.execPath, ["--test", ...options, ...files], { stdio: "inherit" });
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
