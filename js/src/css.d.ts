// CSS files are imported for their side effect: esbuild collects them into widgets.css.
declare module "*.css";
