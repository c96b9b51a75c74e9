"""Screens: the main debugger screen and its small modal prompts."""
