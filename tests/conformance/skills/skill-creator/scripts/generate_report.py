#!/usr/bin/env python3
"""Render results as HTML."""
import html
import sys


def generate_html(results):
    return "<ul>" + "".join(f"<li>{html.escape(str(r))}</li>" for r in results) + "</ul>"


if __name__ == "__main__":
    print(generate_html(sys.argv[1:]))
