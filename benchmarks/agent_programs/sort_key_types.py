def parse_rows(lines):
    rows = []
    for line in lines:
        name, score = line.split(":")
        rows.append({"name": name, "score": score})
    return rows


def top(rows):
    ordered = sorted(rows, key=lambda r: r["score"], reverse=True)
    return ordered[0]["name"]


result = top(parse_rows(["ann:9", "bob:10", "cy:7"]))
print("top", result)
