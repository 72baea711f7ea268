#!/usr/bin/env python3
"""hopsplit.py CAPTURE HOP_PORT UPSTREAM_PORT: where a one-hop call's time goes, on the wire.

CAPTURE is `tcpdump -i lo -nn -tt -l 'tcp port HOP_PORT or tcp port UPSTREAM_PORT' and
'tcp[tcpflags] & tcp-push != 0'` taken while `resourced-bench gateway` runs its pass-through
(calls one at a time, alternating the hop -- a gateway or a proxy on HOP_PORT -- and the upstream
directly). For each call through the hop it takes the kernel's timestamps of the request reaching
the hop, the hop's request to the upstream, the upstream's last answer packet and the hop's answer,
and prints p10/p50/p90 in µs of:
  pre       the hop's work before the upstream has the request
  upstream  the upstream's time for the hop's request
  post      the hop's work after the upstream's answer
and, for the calls made directly, the upstream's time for them. What the hop adds is pre + post,
plus whatever upstream time it adds by loading the same cores.
"""
import re
import statistics
import sys


def main():
    path, hop, up = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ev = []
    for line in open(path):
        m = re.match(r'(\S+) IP 127\.0\.0\.1\.(\d+) > 127\.0\.0\.1\.(\d+): ', line)
        if m:
            ev.append((float(m[1]), int(m[2]), int(m[3])))
    pre, upstream, post = [], [], []
    hop_ports = set()
    call = None  # [t request in, t to upstream, hop's upstream port, t last answer packet]
    for t, src, dst in ev:
        if dst == hop:
            call = [t, None, None, None]
        elif call and dst == up and call[1] is None:
            call[1], call[2] = t, src
            hop_ports.add(src)
        elif call and call[1] is not None and src == up and dst == call[2]:
            call[3] = t
        elif call and src == hop and call[3] is not None:
            pre.append(call[1] - call[0])
            upstream.append(call[3] - call[1])
            post.append(t - call[3])
            call = None
    direct, cur = [], None
    for t, src, dst in ev:
        if dst == up and src not in hop_ports:
            if cur and cur[2] is not None:
                direct.append(cur[2] - cur[1])
            cur = [src, t, None]
        elif cur and src == up and dst == cur[0]:
            cur[2] = t
    if cur and cur[2] is not None:
        direct.append(cur[2] - cur[1])

    def q(a):
        if len(a) < 10:
            return 'too few calls'
        qs = statistics.quantiles([x * 1e6 for x in a], n=100)
        return '%4.0f %4.0f %4.0f' % (qs[9], qs[49], qs[89])

    print('calls through the hop: %d; µs p10 p50 p90' % len(pre))
    print('  pre              %s' % q(pre))
    print('  upstream         %s' % q(upstream))
    print('  post             %s' % q(post))
    print('  upstream, direct %s' % q(direct))


if __name__ == '__main__':
    main()
