"""An in-memory switch for testing the control loop without bmv2."""

from control_plane.driver import CounterRead, PortCounters, SwitchUnavailable
from p4rcp import dataplane as dp

ZERO = PortCounters(0, 0, 0, 0, 0)


class FakeDriver:
    def __init__(self, ports, counter_bits=64, rtt_sum_bits=32, queue_rate_unit="bytes",
                 police_epoch_s=dp.POLICE_EPOCH_S["v1model"], queue_unit_bytes=None):
        self.counter_bits, self.rtt_sum_bits, self.queue_rate_unit = counter_bits, rtt_sum_bits, queue_rate_unit
        self.queue_unit_bytes = queue_unit_bytes
        self.sets_queues = True
        self.police_epoch_s = police_epoch_s
        self.features = dp.ALL_FEATURES
        self.classic_drops: dict[int, float] = {}               # by port
        self.classic_drop_writes: list[dict[int, float]] = []
        self.counters = {p: ZERO for p in ports}
        self.rates: dict[int, int] = {}              # by cell: p4rcp.dataplane.rate_cell(port, class)
        self.rate_writes: list[dict[int, int]] = []
        self.police: dict[int, tuple[int, int]] = {}
        self.police_writes: list[dict[int, tuple[int, int]]] = []
        self.syn_grants: dict[int, dp.SynGrants] = {}                # by port
        self.syn_grant_writes: list[dict[int, dp.SynGrants]] = []
        self.weight_classes: dict[tuple[int, int], int] = {}     # (port, DSCP) -> cell
        self.cells_unstamped_when_classified: set[int] = set()   # cells the classes pointed at before a stamp
        self.routes = []
        self.queues = {}
        self.up = True
        self.connects = 0
        # Time a read takes on the caller's clock when that is a test's settable clock (.t): until the
        # switch answers (the round trip, the switch's thread waking), then decoding the answer.
        self.answer_s = self.decode_s = 0.0

    def add(self, port, nbytes=0, packets=0, rtt_us=0, samples=0, qdepth=None, policed_bytes=0, policed_packets=0,
            long_arrivals=0, committed_arrivals=0, committed_departures=0):
        """Traffic crossed the port (policed_*: the part of it policing dropped, counted in nbytes and packets
        too, as the data plane counts them; long_arrivals: long flows' SYNs, committed_*: the sizes, capped at
        P, of SYNs and ENDING packets); counts wrap at their widths as the data plane's would."""
        c = self.counters[port]
        wrap, wrap_sum = (1 << self.counter_bits) - 1, (1 << self.rtt_sum_bits) - 1
        self.counters[port] = PortCounters((c.input_bytes + nbytes) & wrap, (c.input_packets + packets) & wrap,
                                           (c.rtt_sum_us + rtt_us) & wrap_sum, (c.rtt_count + samples) & wrap,
                                           c.queue_depth if qdepth is None else qdepth,
                                           (c.policed_bytes + policed_bytes) & wrap,
                                           (c.policed_packets + policed_packets) & wrap,
                                           (c.long_arrivals + long_arrivals) & 0xFFFFFFFF,
                                           (c.committed_arrivals + committed_arrivals) & 0xFFFFFFFF,
                                           (c.committed_departures + committed_departures) & 0xFFFFFFFF)

    def rate(self, port, weight_class=0):
        """The stamp written for (port, class), kb/s."""
        return self.rates[dp.rate_cell(port, weight_class)]

    def restart(self):
        """The switch process restarted: state lost."""
        self.counters = {p: ZERO for p in self.counters}
        self.rates, self.routes, self.queues, self.police, self.weight_classes = {}, [], {}, {}, {}
        self.syn_grants, self.classic_drops = {}, {}

    def _check(self):
        if not self.up:
            raise SwitchUnavailable("fake switch is down")

    def connect(self):
        self._check()
        self.connects += 1

    def close(self):
        pass

    def read_counters(self, ports, clock):
        self._check()
        self._spend(clock, self.answer_s)
        read = CounterRead(clock(), {p: self.counters[p] for p in ports})
        self._spend(clock, self.decode_s)
        return read

    @staticmethod
    def _spend(clock, seconds):
        if seconds:
            clock.t += seconds

    def write_rates_kbps(self, rates):
        self._check()
        self.rates.update(rates)
        self.rate_writes.append(dict(rates))

    def write_police(self, params):
        self._check()
        self.police.update(params)
        self.police_writes.append(dict(params))

    def write_syn_grants(self, grants):
        self._check()
        self.syn_grants.update(grants)
        self.syn_grant_writes.append(dict(grants))

    def write_classic_drop(self, probabilities):
        self._check()
        self.classic_drops.update(probabilities)
        self.classic_drop_writes.append(dict(probabilities))

    def read_stamps_kbps(self, cells):
        """A cell never written holds the reset value, which reads as no stamp."""
        self._check()
        return {cell: self.rates.get(cell, dp.RATE_NONE) for cell in cells}

    def install_weight_classes(self, ports, classes):
        self._check()
        wanted = {(port, dscp): dp.rate_cell(port, classes.get(dscp, 0))
                  for port in ports for dscp in range(dp.NUM_DSCP)}
        changes = _changes(self.weight_classes, wanted)
        self.weight_classes = wanted
        self.cells_unstamped_when_classified |= set(self.weight_classes.values()) - set(self.rates)
        return changes

    def install_routes(self, routes):
        self._check()
        changes = _changes({r.prefix: r for r in self.routes}, {r.prefix: r for r in routes})
        self.routes = list(routes)
        return changes

    def set_queue(self, port, rate_pps, depth_pkts):
        self._check()
        self.queues[port] = (rate_pps, depth_pkts)


def _changes(have: dict, want: dict) -> dict[str, int]:
    """What reconciling a table from `have` to `want` (key -> entry) changes, as the drivers count it."""
    return {"added": len(want.keys() - have.keys()),
            "modified": sum(have[k] != want[k] for k in want.keys() & have.keys()),
            "deleted": len(have.keys() - want.keys())}
