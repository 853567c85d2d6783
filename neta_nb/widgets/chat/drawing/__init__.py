"""What a conversation is drawn as, for the chat view and the cards alike: its messages as
items (``render``), the operations that stream them to the views in numbered batches
(``batcher``), a sub-agent's run inside its ``delegate`` card (``subagent_parts``), and the
static form a saved notebook shows (``static``) with its heading (``session_names``)."""
