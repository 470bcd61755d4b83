"""A small n-body simulation: the program ``tools/flamegraph_demo.py``
profiles with ``python -m cassette profile --format html`` to make
``docs/flamegraph.png`` (and ``tests/test_flamegraph.py`` checks what that
profile counts).  Usage: ``python tools/nbody_demo.py [STEPS [BODIES]]``;
prints the energy every ten steps."""

import math
import sys


class Body:
    def __init__(self, x, y, z, vx, vy, vz, mass):
        self.x, self.y, self.z = x, y, z
        self.vx, self.vy, self.vz = vx, vy, vz
        self.mass = mass

    def advance(self, others, dt):
        for other in others:
            if other is not self:
                self.pull(other, dt)
        self.x += dt * self.vx
        self.y += dt * self.vy
        self.z += dt * self.vz

    def pull(self, other, dt):
        dx, dy, dz = self.x - other.x, self.y - other.y, self.z - other.z
        mag = dt * other.mass / (distance(dx, dy, dz) ** 3)
        self.vx -= dx * mag
        self.vy -= dy * mag
        self.vz -= dz * mag

    def kinetic(self):
        return 0.5 * self.mass * (self.vx * self.vx + self.vy * self.vy + self.vz * self.vz)


def distance(dx, dy, dz):
    return math.sqrt(dx * dx + dy * dy + dz * dz)


def potential(bodies):
    total = 0.0
    for i, a in enumerate(bodies):
        for b in bodies[i + 1:]:
            total -= a.mass * b.mass / distance(a.x - b.x, a.y - b.y, a.z - b.z)
    return total


def energy(bodies):
    return sum(body.kinetic() for body in bodies) + potential(bodies)


def make_system(n):
    return [Body(math.cos(i), math.sin(i), 0.1 * i, -math.sin(i) / 3, math.cos(i) / 3,
                 0.0, 1.0 / (i + 1)) for i in range(n)]


def report(history):
    rows = [format_row(step, e) for step, e in history]
    return "\n".join(sorted(rows, key=len))


def format_row(step, e):
    return "%4d %+.9f" % (step, e)


def simulate(bodies, steps, dt):
    history = []
    for step in range(1, steps + 1):
        advance_all(bodies, dt)
        if step % 10 == 0:
            history.append((step, energy(bodies)))
    return history


def advance_all(bodies, dt):
    for body in bodies:
        body.advance(bodies, dt)


def main(steps=200, n=5):
    bodies = make_system(n)
    history = [(0, energy(bodies))] + simulate(bodies, steps, 0.01)
    return report(history)


if __name__ == "__main__":
    print(main(*map(int, sys.argv[1:])))
