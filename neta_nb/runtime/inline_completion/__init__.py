"""Inline code completion: what the model is told about the cell and the live kernel
(:mod:`.context`), the completer that runs one request at a time off the kernel's thread
(:mod:`.completer`; its fill-in-the-middle call is :mod:`neta_nb.providers.openai_fim`),
and ``neta_nb.inline_completion``, the kernel's end of the link to the page (:mod:`.link`;
the page's end is ``js/labextension/src/inline-completion.ts``)."""

from .completer import InlineCompleter
from .context import CompletionContext, CompletionRequest, variable_context
from .link import COMM_TARGET, InlineCompletion, inline_completion

__all__ = ["COMM_TARGET", "CompletionContext", "CompletionRequest", "InlineCompleter",
           "InlineCompletion", "inline_completion", "variable_context"]
