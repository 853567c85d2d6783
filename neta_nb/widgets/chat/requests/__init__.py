"""What a chat view answers beside its turns, each job an object or functions of its own:
the ``@`` mention popup and chips (``mention_requests``), the cells a Send carries
(``cell_context``), a message's Retry / Edit / Rewind / Fork (``message_actions``), Fix and
Explain on a cell's error (``error_actions``) and an outside agent's ``/`` commands and
modes (``agent_controls``)."""
