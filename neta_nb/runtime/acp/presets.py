"""The outside agents neta_nb knows how to find: Claude Code, Codex and Gemini CLI, each
as the npm package that speaks the Agent Client Protocol, at the version it was tested
with. :func:`find_command` finds an installed one or says exactly how to install it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CLAUDE_CODE", "CODEX", "GEMINI", "AgentNotInstalledError", "Preset",
           "find_command"]


class AgentNotInstalledError(FileNotFoundError):
    """The outside agent's program is not installed where it was looked for."""


@dataclass(frozen=True)
class Preset:
    """An outside agent: its name, the npm package (pinned) and the program it installs,
    the arguments that start it speaking ACP, and what it reads for its key."""

    name: str
    package: str
    version: str
    program: str
    args: tuple[str, ...]
    reads: str

    @property
    def install(self) -> str:
        return f"npm install -g {self.package}@{self.version}"


CLAUDE_CODE = Preset(
    "Claude Code", "@zed-industries/claude-agent-acp", "0.23.1", "claude-agent-acp", (),
    "ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another Messages API server)")
CODEX = Preset(
    "Codex", "@zed-industries/codex-acp", "0.16.0", "codex-acp", (),
    "OPENAI_API_KEY (or CODEX_API_KEY), and the model provider of $CODEX_HOME/config.toml "
    "for another Responses API server")
GEMINI = Preset(
    "Gemini CLI", "@google/gemini-cli", "0.61.0", "gemini", ("--acp",),
    "GEMINI_API_KEY (and GOOGLE_GEMINI_BASE_URL for another server)")


def find_command(preset: Preset, search: str | Path | None = None) -> list[str]:
    """The command that starts ``preset``'s agent: its program in the folder ``search``
    (a ``node_modules/.bin``) if given, else on ``PATH``, else in ``./node_modules/.bin``.
    Raises :class:`AgentNotInstalledError` saying how to install it."""
    places = [Path(search)] if search is not None else []
    found = None
    for place in places:
        candidate = place / preset.program
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found = str(candidate.absolute())
            break
    if found is None and search is None:
        found = shutil.which(preset.program) or shutil.which(
            preset.program, path=str(Path.cwd() / "node_modules" / ".bin"))
    if found is None:
        where = f"in {search}" if search is not None else "on PATH or in ./node_modules/.bin"
        raise AgentNotInstalledError(
            f"{preset.name} (the Agent Client Protocol agent {preset.package}) is not "
            f"installed: no {preset.program!r} {where}. Install it with Node.js 20 or "
            f"later:  {preset.install}  — it reads {preset.reads}. Or give the command "
            f"yourself: AcpAgent({preset.name!r}, command=[...]).")
    return [found, *preset.args]
