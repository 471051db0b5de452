"""A generator pipeline over log lines."""

LOG = """INFO start
WARN disk 91%
INFO request /a
ERROR timeout /b
INFO request /c
ERROR refused /d"""


def read(text):
    for line in text.splitlines():
        yield line


def parse(lines):
    for line in lines:
        level, _, message = line.partition(" ")
        yield level, message


def only(records, level):
    for rec_level, message in records:
        if rec_level == level:
            yield message


errors = list(only(parse(read(LOG)), "ERROR"))
print(errors)
