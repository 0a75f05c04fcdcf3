"""Pages loaded in headless Chromium (placeholder docstring)."""
