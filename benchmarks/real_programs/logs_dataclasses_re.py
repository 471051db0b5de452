"""Log parsing with regular expressions into dataclasses, then a summary."""

import re
from dataclasses import asdict, dataclass, field

LOG = """\
2024-05-01 12:00:01 INFO  server started port=8080
2024-05-01 12:00:05 WARN  slow request path=/api/items ms=812
2024-05-01 12:00:09 ERROR failed request path=/api/orders status=500
2024-05-01 12:01:00 INFO  request path=/api/items ms=40
2024-05-01 12:01:30 WARN  slow request path=/api/orders ms=1203
"""
LINE = re.compile(r"^(?P<date>\S+) (?P<time>\S+) (?P<level>[A-Z]+)\s+(?P<message>.*?)(?P<fields>(?: \w+=\S+)*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


@dataclass
class Entry:
    level: str
    message: str
    fields: dict = field(default_factory=dict)


def parse(text):
    entries = []
    for line in text.splitlines():
        match = LINE.match(line)
        if match is None:
            continue
        fields = dict(FIELD.findall(match["fields"]))  # breakpoint
        entries.append(Entry(match["level"], match["message"].strip(), fields))
    return entries


entries = parse(LOG)
by_level = {}
for entry in entries:
    by_level[entry.level] = by_level.get(entry.level, 0) + 1
print(by_level)
slow = [e for e in entries if int(e.fields.get("ms", 0)) > 500]
print([asdict(e) for e in slow])
