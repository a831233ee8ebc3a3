"""Asking a person in a notebook: the panel, the approver and how a cell waits for a click."""
