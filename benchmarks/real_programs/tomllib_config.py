"""Reading a TOML configuration with tomllib and validating it."""

import tomllib

CONFIG = """
[project]
name = "demo"
version = "1.2.0"
dependencies = ["click>=8", "attrs"]

[tool.runner]
workers = 4
timeout = 2.5
paths = ["src", "tests"]

[[tool.runner.jobs]]
name = "lint"
cmd = "ruff check"

[[tool.runner.jobs]]
name = "test"
cmd = "pytest -q"
"""


def load(text):
    data = tomllib.loads(text)
    runner = data["tool"]["runner"]  # breakpoint
    problems = []
    if runner["workers"] < 1:
        problems.append("workers must be positive")
    jobs = {job["name"]: job["cmd"] for job in runner["jobs"]}
    return data["project"]["name"], jobs, problems


name, jobs, problems = load(CONFIG)
print(name)
for job, cmd in sorted(jobs.items()):
    print(f"{job}: {cmd}")
print(problems or "ok")
