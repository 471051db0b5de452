"""An org chart: who reports to whom, and team sizes."""

reports_to = {
    "ana": None,
    "ben": "ana",
    "cai": "ana",
    "dee": "ben",
    "eli": "ben",
    "fay": "cai",
}


def chain_of_command(person):
    chain = []
    boss = reports_to[person]
    while boss is not None:
        chain.append(boss)
        boss = reports_to[boss]
    return chain


def team_size(manager):
    direct = [p for p, b in reports_to.items() if b == manager]
    return len(direct) + sum(team_size(p) for p in direct)


print(chain_of_command("eli"), team_size("ana"), team_size("cai"))
