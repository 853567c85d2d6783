"""The cards a chat is made of, each also a widget of its own: plan, tool, skill,
sub-agent, thinking, token figures and the thinking-level selector."""
