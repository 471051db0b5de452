"""Find duplicate ids in a list of records."""

records = [
    {"id": 3, "name": "x"},
    {"id": 7, "name": "y"},
    {"id": 3, "name": "z"},
    {"id": 9, "name": "w"},
    {"id": 7, "name": "v"},
]


def duplicates(rows):
    seen = set()
    dups = []
    for row in rows:
        if row["id"] in seen:
            dups.append(row["id"])
        seen.add(row["id"])
    return dups


print(duplicates(records))
