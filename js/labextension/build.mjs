// Builds the extension into ../../neta_nb/labextension (package.json's jupyterlab.outputDir),
// as `jupyter labextension build` would, with Node alone: the Python build hook
// (hatch_build.py) runs where JupyterLab itself is not installed. Steps: a strict type
// check and compile (src/ -> lib/), JupyterLab's builder (webpack + module federation:
// the @jupyterlab/* packages stay the page's own), then install.json beside the result
// (it tells `jupyter labextension list` which Python package installed it).
// The builder reads JupyterLab's shared-package metadata from a core package directory;
// @jupyterlab/core-meta ships that metadata (locked in package-lock.json), so nothing is
// fetched. Usage: node build.mjs [--development]
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const node = process.execPath;
const run = (args) => execFileSync(node, args, { cwd: here, stdio: "inherit" });

rmSync(join(here, "lib"), { recursive: true, force: true });
run([join(here, "node_modules", "typescript", "bin", "tsc"), "-p", here]);

const core = mkdtempSync(join(tmpdir(), "neta-nb-labextension-core-"));
try {
  copyFileSync(join(here, "node_modules", "@jupyterlab", "core-meta", "core.package.json"), join(core, "package.json"));
  const builder = join(here, "node_modules", "@jupyterlab", "builder", "lib", "build-labextension.js");
  const mode = process.argv.includes("--development") ? ["--development"] : [];
  run([builder, "--core-path", core, ...mode, here]);
} finally {
  rmSync(core, { recursive: true, force: true });
}

const { jupyterlab } = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));
copyFileSync(join(here, "install.json"), join(resolve(here, jupyterlab.outputDir), "install.json"));
