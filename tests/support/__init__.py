"""Helpers shared by the test suite: the offline guard, fake providers, small tools and
session helpers. Nothing here ships with the package."""
