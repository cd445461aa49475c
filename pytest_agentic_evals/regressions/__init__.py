"""Retained regressions: incidents kept as guards, audited, and shown to fail before the fix."""
