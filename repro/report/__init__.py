"""Rendering: tables and claims to Markdown and LaTeX (Jinja templates), and the report."""
