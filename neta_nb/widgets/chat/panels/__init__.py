"""What the chat view's header opens beside the conversation (``header_panels``): the list
of stored chats (``session_sidebar``: :class:`~.session_sidebar.SessionSidebar`, a widget
of its own too) and the agent's tool panel."""
