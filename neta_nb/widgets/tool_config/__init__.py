"""The tool configuration panel: its traits, the prompt preview and its static form."""
