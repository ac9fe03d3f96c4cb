"""Delphi studies, rounds, panelists and responses (built in the Delphi issue)."""
