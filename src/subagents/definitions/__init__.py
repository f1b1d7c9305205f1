"""definitions package."""
