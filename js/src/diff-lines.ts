/**
 * Lines of a unified diff as the cards draw them: each line a block of its own, coloured
 * by what it does (added, removed, a hunk's header, a file's header). The cell edit card
 * draws its proposals so; a ```diff block in an answer or a tool's result (an outside
 * agent's file edit) is drawn the same way.
 */
import "./diff-lines.css";
import { element } from "./dom";

/** The class of one diff line: what it does to the text. */
export function diffLineKind(line: string): "add" | "del" | "hunk" | "meta" | "same" {
  if (line.startsWith("+++") || line.startsWith("---")) return "meta";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "same";
}

/** One line of a diff, empty (its text is the caller's to add). */
export function diffLine(line: string): HTMLElement {
  return element("span", `neta-diff-line neta-diff-${diffLineKind(line)}`);
}

/** Each ```diff code block under `root` drawn as diff lines (its text unchanged). */
export function colourDiffBlocks(root: ParentNode): void {
  for (const code of Array.from(root.querySelectorAll("pre > code.language-diff"))) {
    const text = code.textContent ?? "";
    const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
    code.replaceChildren();
    for (const line of lines) {
      const row = diffLine(line);
      row.textContent = line;
      code.append(row, "\n");
    }
    code.parentElement?.classList.add("neta-diff-block");
  }
}
