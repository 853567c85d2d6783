/**
 * An outside agent's `/` commands in the prompt box (pure logic, see ./slash-menu.ts for
 * the menu): a command is typed at the very start of the prompt, `/` then its name, and
 * goes to the agent as the prompt's text (the Agent Client Protocol's way).
 */

/** One of the agent's `/` commands (Python twin: `AgentCommand`, widgets/chat/requests/agent_controls.py). */
export interface AgentCommand {
  name: string;
  description: string;
}

/** The command being typed with the caret at `caret`: what follows the `/` up to the caret
 * (`""` right after it), or null when the prompt does not start with one there (text
 * before the `/`, or a space or line between it and the caret). */
export function slashAtCaret(text: string, caret: number): string | null {
  if (!text.startsWith("/") || caret < 1) return null;
  const typed = text.slice(1, caret);
  return /\s/.test(typed) ? null : typed;
}

/** The commands whose name starts with `typed` (any case) first, then those whose name
 * holds it elsewhere, each group in the agent's order. */
export function filterCommands(commands: readonly AgentCommand[], typed: string): AgentCommand[] {
  const wanted = typed.toLowerCase();
  const starts: AgentCommand[] = [];
  const holds: AgentCommand[] = [];
  for (const command of commands) {
    const name = command.name.toLowerCase();
    if (name.startsWith(wanted)) starts.push(command);
    else if (wanted !== "" && name.includes(wanted)) holds.push(command);
  }
  return [...starts, ...holds];
}

/** The prompt with `command` chosen: `/name ` in place of what was typed up to the end of
 * the word at the caret, the rest kept; and where the caret goes. */
export function withCommand(text: string, caret: number, command: AgentCommand): { text: string; caret: number } {
  let end = caret;
  while (end < text.length && !/\s/.test(text[end])) end += 1;
  const rest = text.slice(end).replace(/^[^\S\n]+/, "");
  const head = `/${command.name} `;
  return { text: head + rest, caret: head.length };
}
