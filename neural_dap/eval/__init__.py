"""Measuring world models: next-state accuracy per action, and CRUXEval-O / -I through the debugger."""
