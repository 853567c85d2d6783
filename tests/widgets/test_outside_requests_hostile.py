"""Outside requests when a client's review view is turned to another session."""

from __future__ import annotations

from neta_nb.widgets.mcp_review import McpReview
from neta_nb.widgets.outside_reviews import outside_reviews

from ..support.sessions import make_session
from .conftest import SentMessages


def test_a_review_view_turned_to_another_chat_publishes_no_one_elses_request(
        sent: SentMessages) -> None:
    review = McpReview()
    client, _, _ = make_session([])
    review.show(client)
    view = review.views[client.agent.name]
    waiting = [{"id": "call_g", "name": "run_cell", "args": {}}]
    outside_reviews.publish("s_gemini", "gemini", waiting, lambda *_: True)
    try:
        view.bind(make_session([])[0])  # the user opens another chat in the client's view
        shown = outside_reviews.items("s_user")
        assert [(item["id"], item["client"]) for item in shown] == [("call_g", "gemini")]
    finally:
        outside_reviews.publish("s_gemini", "gemini", [], lambda *_: True)
        outside_reviews.publish(client.id, client.agent.name, [], lambda *_: True)
        view.close()
