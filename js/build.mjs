// Bundles js/src/index.ts into neta_nb/static/widgets.js (+ widgets.css), the shared code of
// all widgets, and js/src/loader.ts into loader.js, the small `_esm` each widget carries
// (see neta_nb/widgets/bundle.py), after a type check.
// Usage: node build.mjs [--watch] [--no-typecheck]
import { execFileSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(here, "..", "neta_nb", "static");
const watch = process.argv.includes("--watch");

if (!process.argv.includes("--no-typecheck")) {
  // The type check is part of the build: a bundle is never written from code that fails it.
  execFileSync(process.execPath, [resolve(here, "node_modules", "typescript", "bin", "tsc"), "--noEmit", "-p", here], {
    stdio: "inherit",
  });
}

const options = {
  entryPoints: { widgets: resolve(here, "src", "index.ts"), loader: resolve(here, "src", "loader.ts") },
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: !watch,
  sourcemap: false,
  legalComments: "eof",
  outdir,
  logLevel: "info",
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
