"""Browser tests: real JupyterLab driven in Debian's Chromium (see harness.py)."""
