"""The zone lab's kernel counters sampled over time (scripts/zonelab.sh's
sample_counters), turned into bytes per second for one zone. Imported by
the lab's reports; not a command."""


def load(path, zone):
    """{epoch_ms: {broker_zone: bytes}} for zone, from "EPOCH_MS ZONE
    BROKER_ZONE BYTES" lines (counters, so each sample is a running total)."""
    samples = {}
    for line in open(path):
        t, z, broker, b = line.split()
        if z == zone:
            samples.setdefault(int(t), {})[broker] = int(b)
    return samples


def per_second(samples, zone):
    """(start_ms, end_ms, same, cross) per pair of consecutive samples, in
    bytes per second: to or from zone's own broker, and the others'."""
    ts = sorted(samples)
    for a, b in zip(ts, ts[1:]):
        dt = (b - a) / 1e3
        delta = {k: samples[b].get(k, 0) - samples[a].get(k, 0) for k in samples[b]}
        same = delta.get(zone, 0)
        yield a, b, same / dt, (sum(delta.values()) - same) / dt


def at(series, t):
    """The value of a [(t, value)] series (a probe's samples, in time order)
    at time t: the last sampled at or before t, -1 before the first."""
    return ([v for u, v in series if u <= t] or [-1])[-1]
