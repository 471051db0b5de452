_cache = {}


def load_settings(name):
    if name not in _cache:
        _cache[name] = {"retries": 3, "timeout": 10}
    return _cache[name]


def fast_settings():
    settings = load_settings("default")
    settings["timeout"] = 1
    return settings


def report():
    fast = fast_settings()
    normal = load_settings("default")
    return normal["timeout"], fast["timeout"]


result = report()
print("normal and fast timeouts", result)
