"""Maintenance scripts run from the repository root (``python -m tools.<name>``).

Not part of the installed ``tinynet`` package.
"""
