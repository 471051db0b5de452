"""Parse 'name:score' pairs; one entry is malformed."""

raw = "amy:81,ben:77,cal,dot:92"


def parse(text):
    scores = {}
    for chunk in text.split(","):
        name, score = chunk.split(":")
        scores[name] = int(score)
    return scores


best = max(parse(raw).items(), key=lambda kv: kv[1])
print(best)
