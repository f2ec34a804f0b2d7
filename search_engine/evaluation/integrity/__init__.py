"""Integrity checks: static (source) and runtime (evidence from the sandbox)."""
