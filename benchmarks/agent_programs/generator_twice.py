def read_scores(lines):
    return (int(line) for line in lines)


def summary(lines):
    scores = read_scores(lines)
    best = max(scores)
    count = sum(1 for _ in scores)
    return best, count


result = summary(["3", "9", "4"])
print("best and count", result)
