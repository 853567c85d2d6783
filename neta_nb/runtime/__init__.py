"""The runtime: an agent's definition and the loop that runs it (the session, its turns,
tool runs, approvals, sub-agents, compaction, usage figures, the event hub and the one
place its history grows). It knows nothing of widgets."""
