"""A batch run's live grid (``js/src/batch/``): the widget (:mod:`.batch_grid`) and the
text it shows (:mod:`.batch_grid_text`)."""
