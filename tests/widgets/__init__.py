"""Python-side tests of the widget classes (traits, reprs, static fallbacks)."""
