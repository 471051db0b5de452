"""Parse access-log lines with a regular expression and count status codes."""

import re
from collections import Counter

LINES = [
    '10.0.0.1 - - "GET /index.html" 200 512',
    '10.0.0.2 - - "POST /login" 302 0',
    '10.0.0.1 - - "GET /missing" 404 128',
    '10.0.0.3 - - "GET /index.html" 200 512',
]
PATTERN = re.compile(r'(\S+) - - "(\w+) (\S+)" (\d{3}) (\d+)')

statuses = Counter()
bytes_by_ip = {}
for line in LINES:
    ip, method, path, status, size = PATTERN.match(line).groups()
    statuses[status] += 1
    bytes_by_ip[ip] = bytes_by_ip.get(ip, 0) + int(size)
print(dict(statuses), bytes_by_ip)
