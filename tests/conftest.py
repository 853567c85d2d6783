"""Shared test configuration. Fixtures used by a single module live in that module."""
