"""A turn's tool calls: the tools its model sees and the context each call runs with
(``toolbox``), running the calls of one response (``tool_runner``) within their bounds
(``tool_limits``), and the sub-agents that ``delegate`` calls run (``subagents``:
:class:`~.subagents.Crew`). They work on the session's state and workspace
(``..state``, ``..workspace``) and know nothing of the runner of turns."""
