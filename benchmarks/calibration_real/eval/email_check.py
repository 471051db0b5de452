"""Validate e-mail addresses and group them by domain."""

import re

PATTERN = re.compile(r"^([\w.+-]+)@([\w-]+\.[\w.]+)$")
addresses = ["ann@example.com", "bad@", "bo.b+news@mail.org", "x@y", "cy@example.com"]

valid = {}
invalid = []
for address in addresses:
    match = PATTERN.match(address)
    if match:
        user, domain = match.groups()
        valid.setdefault(domain, []).append(user)
    else:
        invalid.append(address)
print(valid, invalid)
