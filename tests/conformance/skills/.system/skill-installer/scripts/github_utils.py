#!/usr/bin/env python3
"""Shared helpers for the installer scripts."""
from __future__ import annotations

CATALOG = ("gh-comments", "gh-fix-ci")


def api_contents_url(repo: str, path: str) -> str:
    return f"https://api.example.invalid/repos/{repo}/contents/{path}"
