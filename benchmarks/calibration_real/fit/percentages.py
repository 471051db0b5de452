"""Vote shares as percentages that add up to 100."""

votes = {"yes": 412, "no": 367, "abstain": 71}
total = sum(votes.values())
shares = {}
for option, count in votes.items():
    shares[option] = round(100 * count / total, 1)
drift = round(100 - sum(shares.values()), 1)
winner = max(votes, key=votes.get)
print(shares, drift, winner)
