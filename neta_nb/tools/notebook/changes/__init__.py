"""The agent's changes to the notebook, from proposal to undoing: each change proposed as a
diff the user decides (:mod:`.proposals`), the changes of one response reviewed as one set
and the record of those the notebook received (:mod:`.sets`), and that record played
backwards when a rewind or a fork puts the cells back (:mod:`.restore`)."""

from .sets import CHANGE_TOOLS, AppliedChange, applied_changes, grouped_outcome, reviewed_together

__all__ = ["CHANGE_TOOLS", "AppliedChange", "applied_changes", "grouped_outcome",
           "reviewed_together"]
