"""A traffic-light state machine driven by timer ticks."""

TRANSITIONS = {"green": ("yellow", 3), "yellow": ("red", 1), "red": ("green", 4)}

state = "red"
remaining = TRANSITIONS[state][1]
timeline = []
for tick in range(10):
    timeline.append(state[0].upper())
    remaining -= 1
    if remaining == 0:
        state, _ = TRANSITIONS[state]
        remaining = TRANSITIONS[state][1]
print("".join(timeline), state, remaining)
