"""Merge nested configuration dictionaries: later ones win, nested dicts merge."""

import json

defaults = {"server": {"host": "localhost", "port": 8000}, "debug": False, "paths": ["/tmp"]}
override = {"server": {"port": 9000}, "debug": True}


def merge(base, extra):
    result = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = value
    return result


config = merge(defaults, override)
text = json.dumps(config, sort_keys=True)
print(text)
