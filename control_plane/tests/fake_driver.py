"""An in-memory switch for testing the control loop without bmv2."""

from control_plane.driver import PortCounters, SwitchUnavailable


class FakeDriver:
    def __init__(self, ports, counter_bits=64):
        self.counter_bits = counter_bits
        self.counters = {p: PortCounters(0, 0, 0, 0) for p in ports}
        self.rates: dict[int, int] = {}
        self.rate_writes: list[dict[int, int]] = []
        self.routes = []
        self.queues = {}
        self.up = True
        self.connects = 0

    def add(self, port, nbytes=0, rtt_us=0, samples=0, qdepth=None):
        """Traffic crossed the port; wraps at counter_bits as hardware would."""
        c, mask = self.counters[port], (1 << self.counter_bits) - 1
        self.counters[port] = PortCounters((c.input_bytes + nbytes) & mask, (c.rtt_sum_us + rtt_us) & mask,
                                           (c.rtt_count + samples) & mask,
                                           c.queue_depth_pkts if qdepth is None else qdepth)

    def restart(self):
        """The switch process restarted: state lost."""
        self.counters = {p: PortCounters(0, 0, 0, 0) for p in self.counters}
        self.rates, self.routes, self.queues = {}, [], {}

    def _check(self):
        if not self.up:
            raise SwitchUnavailable("fake switch is down")

    def connect(self):
        self._check()
        self.connects += 1

    def close(self):
        pass

    def read_counters(self, ports):
        self._check()
        return {p: self.counters[p] for p in ports}

    def write_rates_kbps(self, rates):
        self._check()
        self.rates.update(rates)
        self.rate_writes.append(dict(rates))

    def install_routes(self, routes):
        self._check()
        self.routes = list(routes)

    def set_queue(self, port, rate_pps, depth_pkts):
        self._check()
        self.queues[port] = (rate_pps, depth_pkts)
