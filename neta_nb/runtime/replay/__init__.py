"""A stored session replayed as an evaluation: :mod:`.replay` runs its prompts again under
another model, prompt or tool set; :mod:`.replay_report` is what the replay found, turn by
turn."""
