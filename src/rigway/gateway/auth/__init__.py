"""Who is calling: API keys, console tokens and rig tokens."""
