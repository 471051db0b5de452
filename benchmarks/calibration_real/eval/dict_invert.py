"""Invert a mapping of people to teams into teams to people."""

team_of = {"ana": "red", "bo": "blue", "cy": "red", "di": "green", "ed": "blue"}


def invert(mapping):
    inverted = {}
    for key, value in mapping.items():
        inverted.setdefault(value, []).append(key)
    return inverted


teams = invert(team_of)
sizes = {team: len(members) for team, members in teams.items()}
print(teams, sizes)
