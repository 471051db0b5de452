"""Types every layer shares: states, actions, the world-model interface, source facts, safe values."""
