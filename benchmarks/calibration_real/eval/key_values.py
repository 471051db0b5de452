"""Parse key=value settings, with types and errors collected."""

RAW = """
name = demo
workers = 4
verbose = yes
timeout = 2.5
broken line
ratio = 3/4
"""


def convert(text):
    if text.isdigit():
        return int(text)
    if text in ("yes", "no"):
        return text == "yes"
    try:
        return float(text)
    except ValueError:
        return text


settings = {}
errors = []
for number, line in enumerate(RAW.strip().splitlines(), start=1):
    if "=" not in line:
        errors.append(number)
        continue
    key, value = (part.strip() for part in line.split("=", 1))
    settings[key] = convert(value)
print(settings, errors)
