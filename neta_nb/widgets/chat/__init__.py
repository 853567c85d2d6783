"""The chat view and what only it uses: the view (``view``), its state on the wire
(``wire``), the sessions it follows — live (``live``, with its presence on the page and the
page's notebook bridge) or stored and read-only (``read_only``, ``stored_session``) — and
the requests it answers for them (``mention_requests``, ``message_actions``). What a
conversation is drawn as is the subpackage ``drawing`` (the cards use it too); what the
view's header opens, the session list among it, is ``panels``."""
