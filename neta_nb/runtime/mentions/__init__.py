"""What a prompt carries besides its text: ``@`` mentions (:mod:`.mentions` finds and
resolves them, :mod:`.mention_candidates` lists what can be mentioned now) and attached
files (:mod:`.attachments`, also what a mentioned file becomes)."""
