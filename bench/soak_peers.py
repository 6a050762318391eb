"""The peers of bench/soak.py: namespaces on its bridge whose sink comes
and goes, and the dnsmasq that names them."""
import os
import signal
import subprocess
import time

import soak_net

DNSMASQ = "/usr/sbin/dnsmasq"
SUBNET = "198.18.9"
PEER_NAME = "soak-peers.zcal.test"
SINK_PORT = 7070


def peer_agent_config(tmp, segment, keys, address):
    return f"""\
paths: [{{name: loopback, type: loopback}}]
schedule: {{at_startup: false, interval: 30d}}
segment: {{name: {segment}}}
metrics: {{listen: ""}}
state: {{path: {tmp}/{segment.strip('/')}.json}}
sink:
  listen: "{address}:{SINK_PORT}"
  key_file: {keys}
  allow: [198.18.0.0/15]
"""


class Peers:
    """Peer namespaces whose sink comes and goes; dnsmasq's answer for
    PEER_NAME lists the peers that run."""

    def __init__(self, res, tmp, names, keys, zcal, hosts_file, dnsmasq):
        self.res, self.tmp, self.names, self.keys, self.zcal = res, tmp, names, keys, zcal
        self.hosts_file, self.dnsmasq = hosts_file, dnsmasq
        self.running = {}  # index -> Popen
        self.turn = 0
        self.started = self.killed = 0

    def address(self, i):
        return f"{SUBNET}.{10 + i}"

    def start(self, i):
        log = f"{self.tmp}/peer{i}.log"
        if self.started % 2 == 0:
            argv = [self.zcal, "sink", "--listen", f"{self.address(i)}:{SINK_PORT}",
                    "--allow", "198.18.0.0/15", "--key-file", self.keys]
            marker = "zcal sink: serving on"
        else:
            segment = f"/zcal-soak-{os.getpid()}-p{i}"
            for path in (f"/dev/shm{segment}", f"/dev/shm{segment}.lock"):
                self.res.remove_later(path)
            config = f"{self.tmp}/peer{i}.yaml"
            with open(config, "w") as f:
                f.write(peer_agent_config(self.tmp, segment, self.keys, self.address(i)))
            argv = [self.zcal, "agent", "--config", config]
            marker = "serving the peer sink"
        size = os.path.getsize(log) if os.path.exists(log) else 0
        child = self.res.start(argv, log, netns=self.names[i])
        self.started += 1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and child.poll() is None:
            with open(log, errors="replace") as f:
                f.seek(size)
                if marker in f.read():
                    break
            time.sleep(0.05)
        self.running[i] = child

    def stop(self, i):
        sig = signal.SIGKILL if self.killed % 2 else signal.SIGTERM
        self.res.stop(self.running.pop(i), sig)
        self.killed += 1

    def publish_dns(self):
        with open(self.hosts_file, "w") as f:
            for i in sorted(self.running):
                f.write(f"{self.address(i)} {PEER_NAME}\n")
        self.dnsmasq.send_signal(signal.SIGHUP)  # re-reads --addn-hosts

    def churn(self):
        """One peer joins or leaves, round robin; at least one stays."""
        i = self.turn % len(self.names)
        self.turn += 1
        if i in self.running and len(self.running) > 1:
            self.stop(i)
        elif i not in self.running:
            self.start(i)
        self.publish_dns()


def setup(res, tmp, zcal, peer_count):
    """The bridge, its namespaces (the agent's and peer_count peers'), the
    key file, dnsmasq and the first peers. Returns (the agent's namespace,
    the key file, Peers)."""
    prefix = f"{soak_net.PREFIX}{os.getpid()}-"
    members = {"agent": 1}
    members.update({f"p{i}": 10 + i for i in range(peer_count)})
    hub, names = soak_net.bridged_network(res, prefix, members, SUBNET)
    for ns in names.values():
        res.resolv_conf(ns, f"nameserver {SUBNET}.100\n")
    keys = f"{tmp}/peer.keys"
    with open(keys, "w") as f:
        f.write(subprocess.run([zcal, "keygen"], check=True, capture_output=True,
                               text=True).stdout)
    os.chmod(keys, 0o600)
    hosts = f"{tmp}/peers.hosts"
    open(hosts, "w").close()
    dnsmasq = res.start([DNSMASQ, "--no-daemon", "--conf-file=/dev/null", "--no-resolv",
                         "--no-hosts", "--addn-hosts=" + hosts, "--pid-file=", "--user=root",
                         "--log-facility=-", "--bind-interfaces",
                         f"--listen-address={SUBNET}.100", "--local=/zcal.test/"],
                        f"{tmp}/dnsmasq.log", netns=hub)
    if not soak_net.wait_for_file_text(f"{tmp}/dnsmasq.log", "started, version", 10):
        raise RuntimeError("dnsmasq did not start: " + open(f"{tmp}/dnsmasq.log").read())
    peer_names = {i: names[f"p{i}"] for i in range(peer_count)}
    peers = Peers(res, tmp, peer_names, keys, zcal, hosts, dnsmasq)
    for i in range(min(2, peer_count)):
        peers.start(i)
    peers.turn = min(2, peer_count)
    peers.publish_dns()
    return names["agent"], keys, peers
