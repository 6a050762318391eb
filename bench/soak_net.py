"""Network namespaces, children and clean-up for bench/soak.py.

Everything the soak makes is registered here as it is made, so that one
close() removes it whatever happened (a failure, Ctrl-C, SIGTERM): children
are killed (with their process group), namespaces and their /etc/netns
directories deleted, files removed. A soak killed with SIGKILL leaves
namespaces zsk<PID>-*, segments /zcal-soak-<PID>* and a directory
zcal-soak-<PID>-*; the next soak removes those of dead PIDs.
"""
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PREFIX = "zsk"

_libc = ctypes.CDLL(None, use_errno=True)


def _child_setup():
    # A soak killed before its clean-up runs takes its children with it.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def ip_binary():
    """iproute2's ip, or "" when there is none."""
    for path in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"):
        if os.access(path, os.X_OK):
            return path
    return ""


def enter_netns(name):
    """Moves the calling thread (only it) into network namespace `name`."""
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def sweep_leftovers():
    """Deletes the namespaces, segments and directories of soaks whose
    process is gone."""
    ip = ip_binary()
    for directory in ("/run/netns", "/etc/netns"):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            pid = name[len(PREFIX):].split("-", 1)[0]
            if not name.startswith(PREFIX) or "-" not in name or not pid.isdigit():
                continue
            if _pid_alive(int(pid)):
                continue
            if directory == "/run/netns":
                subprocess.run([ip, "netns", "del", name], capture_output=True)
            shutil.rmtree(f"/etc/netns/{name}", ignore_errors=True)
    # Segments /zcal-soak-<PID>[-pN][.lock] and directories zcal-soak-<PID>-*.
    for directory in ("/dev/shm", tempfile.gettempdir()):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            pid = re.match(r"zcal-soak-(\d+)", name)
            if not pid or _pid_alive(int(pid[1])):
                continue
            path = os.path.join(directory, name)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)


class Resources:
    """What a soak made; close() undoes all of it, in reverse order."""

    def __init__(self):
        self.ip = ip_binary()
        self.children = []
        self.namespaces = []
        self.files = []
        self.lock = threading.Lock()

    def run_ip(self, *args):
        r = subprocess.run([self.ip, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"`ip {' '.join(args)}` exited {r.returncode}: {r.stderr.strip()}")

    def netns(self, name):
        self.run_ip("netns", "add", name)
        self.namespaces.append(name)
        self.run_ip("-n", name, "link", "set", "lo", "up")
        return name

    def resolv_conf(self, name, text):
        os.makedirs(f"/etc/netns/{name}", exist_ok=True)
        with open(f"/etc/netns/{name}/resolv.conf", "w") as f:
            f.write(text)

    def start(self, argv, log_path, netns=None, stdout=None):
        """A child in its own process group, its stderr (and stdout unless
        given) in log_path."""
        if netns:
            argv = [self.ip, "netns", "exec", netns, *argv]
        with open(log_path, "ab") as log:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=stdout if stdout is not None else log,
                                     stderr=log, start_new_session=True,
                                     preexec_fn=_child_setup)
        with self.lock:
            self.children.append(child)
        return child

    def stop(self, child, sig=signal.SIGTERM, timeout=10):
        """Signals a child and reaps it; SIGKILL after `timeout`. Returns
        its exit status (negative: the signal that ended it)."""
        if child.poll() is None:
            try:
                child.send_signal(sig)
                child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        try:
            os.killpg(child.pid, signal.SIGKILL)  # what it left behind
        except OSError:
            pass
        with self.lock:
            if child in self.children:
                self.children.remove(child)
        return child.returncode

    def remove_later(self, path):
        self.files.append(path)

    def close(self):
        for child in list(self.children):
            self.stop(child, signal.SIGKILL, timeout=5)
        for name in reversed(self.namespaces):
            subprocess.run([self.ip, "netns", "del", name], capture_output=True)
            shutil.rmtree(f"/etc/netns/{name}", ignore_errors=True)
        self.namespaces.clear()
        for path in self.files:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.files.clear()


def bridged_network(res, prefix, members, subnet="198.18.9"):
    """A hub namespace with bridge br0 at SUBNET.100/24 and one namespace
    per member name, each with eth0 at SUBNET.N/24 (N from `members`,
    a dict name -> N) and a default route through the hub."""
    hub = res.netns(f"{prefix}hub")
    res.run_ip("-n", hub, "link", "add", "br0", "type", "bridge")
    res.run_ip("-n", hub, "addr", "add", f"{subnet}.100/24", "dev", "br0")
    res.run_ip("-n", hub, "link", "set", "br0", "up")
    names = {}
    for member, n in members.items():
        ns = res.netns(f"{prefix}{member}")
        veth = f"v{n}"
        res.run_ip("-n", hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0",
                   "netns", ns)
        res.run_ip("-n", hub, "link", "set", veth, "master", "br0")
        res.run_ip("-n", hub, "link", "set", veth, "up")
        res.run_ip("-n", ns, "addr", "add", f"{subnet}.{n}/24", "dev", "eth0")
        res.run_ip("-n", ns, "link", "set", "eth0", "up")
        res.run_ip("-n", ns, "route", "add", "default", "via", f"{subnet}.100")
        names[member] = ns
    return hub, names


def wait_for_file_text(path, text, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, errors="replace") as f:
                if text in f.read():
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False
