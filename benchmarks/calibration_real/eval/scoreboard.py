"""A game scoreboard: rounds, totals and the leader."""

rounds = [
    {"kim": 10, "lou": 7, "max": 12},
    {"kim": 4, "lou": 11, "max": 3},
    {"kim": 9, "lou": 9, "max": 10},
]

totals = {}
for number, scores in enumerate(rounds, start=1):
    for player, points in scores.items():
        totals[player] = totals.get(player, 0) + points
    leader = max(totals, key=totals.get)
    print(f"after round {number}: {leader} leads with {totals[leader]}")
ranking = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
print(ranking)
