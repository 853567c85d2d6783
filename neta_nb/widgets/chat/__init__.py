"""The chat view and what only it uses: its state on the wire, its static form, nested
sub-agent transcripts, stored sessions opened read-only, and the session list."""
