"""Command modules for the Tinker CLI."""
