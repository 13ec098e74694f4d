"""Running points: one point (shared by local runs and Slurm tasks), and
the local pool of N processes with progress, timeouts and resume.

Results live in <output>/points/:
    <hash>.json         the simulator's --json output, as written (success)
    <hash>.failed.json  why the last attempt failed (status, error line)
    <hash>.log          the simulator's stderr of a failed attempt
    <hash>.meta.json    wall time, host, exit status (not used by collect)
A point is finished when <hash>.json exists; resume skips those.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

from .campaign import CampaignError
from .params import argv_for, error_line, quiet_env

MANIFEST = "manifest.json"


def points_dir(output):
    return os.path.join(output, "points")


def result_path(output, h):
    return os.path.join(points_dir(output), h + ".json")


def failed_path(output, h):
    return os.path.join(points_dir(output), h + ".failed.json")


def is_done(output, h):
    return os.path.isfile(result_path(output, h))


def _write_json(path, data):
    tmp = "%s.%s.%d.tmp" % (path, socket.gethostname(), os.getpid())
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def write_manifest(campaign, incsim, points=None):
    """<output>/manifest.json: every point with its exact command line
    arguments (the simulator path and --json file excepted). Local runs
    and Slurm tasks both run points from it."""
    points = points if points is not None else campaign.points()
    os.makedirs(points_dir(campaign.output), exist_ok=True)
    entries = []
    for p in points:
        args = argv_for(campaign.dir, p.settings, "", "")[1:-3]
        e = p.to_json()
        e["args"] = args
        entries.append(e)
    manifest = {"campaign": campaign.name, "campaign_file": campaign.path,
                "output": campaign.output, "incsim": incsim,
                "timeout": campaign.timeout, "points": entries}
    path = os.path.join(campaign.output, MANIFEST)
    _write_json(path, manifest)
    return path, manifest


def read_manifest(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise CampaignError("cannot read manifest %s: %s" % (path, e)) \
            from None


class PointRun:
    """One simulator process for one point, polled without blocking."""

    def __init__(self, entry, incsim, output, timeout):
        self.entry = entry
        self.hash = entry["hash"]
        self.output = output
        self.timeout = timeout
        self.tmp = os.path.join(points_dir(output), ".%s.%s.%d.tmp" % (
            self.hash, socket.gethostname(), os.getpid()))
        self.log = os.path.join(points_dir(output), self.hash + ".log")
        self.argv = [incsim] + list(entry["args"]) + [
            "--json", self.tmp, "--quiet"]
        self.proc = None
        self.start_time = None
        self.status = None          # "ok", "failed", "timeout"
        self.error = None
        self.elapsed = None

    def start(self):
        os.makedirs(points_dir(self.output), exist_ok=True)
        self.logf = open(self.log + ".tmp%d" % os.getpid(), "w+")
        self.start_time = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=self.logf,
                start_new_session=True, env=quiet_env())
        except OSError as e:
            self.proc = None
            self._finish("failed", None, "cannot run %s: %s" % (
                self.argv[0], e.strerror))
        return self

    def poll(self):
        """True once the point has finished (in any way)."""
        if self.status is not None:
            return True
        rc = self.proc.poll()
        if rc is None:
            if time.monotonic() - self.start_time > self.timeout:
                self.kill()
                self._finish("timeout", None,
                             "timed out after %gs" % self.timeout)
                return True
            return False
        self._finish(None, rc, None)
        return True

    def wait(self, step=0.05):
        while not self.poll():
            time.sleep(step)
        return self

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()

    def abandon(self):
        """Interrupted: kill the process and leave no partial files."""
        self.kill()
        for path in (self.tmp, self.logf.name):
            try:
                os.remove(path)
            except OSError:
                pass
        self.logf.close()

    def _finish(self, status, rc, error):
        self.elapsed = time.monotonic() - self.start_time
        self.logf.flush()
        self.logf.seek(0)
        stderr = self.logf.read()
        self.logf.close()
        if status is None:
            if rc != 0:
                status, error = "failed", error_line(stderr, rc)
            else:
                try:
                    with open(self.tmp) as f:
                        data = json.load(f)
                    if not isinstance(data, dict) or "rows" not in data:
                        raise ValueError("no 'rows'")
                    status = "ok"
                except OSError:
                    status, error = "failed", "exit status 0 but no JSON " \
                        "result written"
                except ValueError as e:
                    status, error = "failed", "invalid JSON result: %s" % e
        self.status, self.error = status, error
        meta = {"hash": self.hash, "status": status, "returncode": rc,
                "elapsed_s": round(self.elapsed, 3),
                "host": socket.gethostname(), "argv": self.argv[1:-3]}
        if status == "ok":
            os.replace(self.tmp, result_path(self.output, self.hash))
            for path in (failed_path(self.output, self.hash), self.log):
                if os.path.exists(path):
                    os.remove(path)
            os.remove(self.logf.name)
        else:
            meta["error"] = error
            if os.path.exists(self.tmp):
                os.remove(self.tmp)
            os.replace(self.logf.name, self.log)
            _write_json(failed_path(self.output, self.hash), {
                "hash": self.hash, "status": status, "error": error,
                "returncode": rc, "settings": self.entry["settings"]})
        _write_json(os.path.join(points_dir(self.output),
                                 self.hash + ".meta.json"), meta)


def _fmt_time(s):
    s = int(round(s))
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm%02ds" % (s // 60, s % 60)
    return "%dh%02dm" % (s // 3600, (s % 3600) // 60)


class Progress:
    def __init__(self, total, already, stream=sys.stderr):
        self.total, self.done, self.failed = total, already, 0
        self.stream = stream
        self.tty = stream.isatty()
        self.t0 = time.monotonic()
        self.finished_here = 0
        self.last = ""

    def line(self, running, jobs):
        todo = self.total - self.done - self.failed
        eta = "?"
        if self.finished_here:
            per = (time.monotonic() - self.t0) / self.finished_here
            left = max(todo - running, 0) + running * 0.5
            eta = _fmt_time(per * left)
        elif todo == 0:
            eta = "0s"
        return ("sweep: %d/%d done, %d failed, %d running, ETA %s" % (
            self.done, self.total, self.failed, running, eta))

    def show(self, running, jobs, force=False):
        text = self.line(running, jobs)
        if self.tty and text != self.last:
            self.stream.write("\r" + text.ljust(len(self.last)))
            self.stream.flush()
        elif force:
            self.stream.write(text + "\n")
            self.stream.flush()
        self.last = text

    def message(self, text):
        if self.tty and self.last:
            self.stream.write("\r" + " " * len(self.last) + "\r")
        self.stream.write(text + "\n")
        self.stream.flush()
        self.last = "" if self.tty else self.last

    def end(self):
        if self.tty and self.last:
            self.stream.write("\n")
            self.stream.flush()


class _Interrupted(Exception):
    pass


_stop = []


def _note_interrupt(signum, frame):
    """Ctrl-C / SIGTERM: noted here, acted on between two polls, so that no
    result file is left half written."""
    _stop.append(signum)


def describe(entry):
    return "point %s (%s)" % (entry["hash"], " ".join(
        "%s=%s" % kv for kv in entry["settings"].items()))


def run_local(manifest, jobs=1, retry_failed=True, stream=sys.stderr):
    """Run the unfinished points of a manifest with `jobs` processes.
    Returns (done, failed, interrupted)."""
    output, incsim = manifest["output"], manifest["incsim"]
    timeout = float(manifest["timeout"])
    entries = manifest["points"]
    pending = []
    already = 0
    for e in entries:
        if is_done(output, e["hash"]):
            already += 1
        elif not retry_failed and os.path.exists(
                failed_path(output, e["hash"])):
            continue
        else:
            pending.append(e)
    prog = Progress(len(entries), already, stream)
    if already:
        prog.message("sweep: %d of %d points already done, %d to run" % (
            already, len(entries), len(pending)))
    running = []
    del _stop[:]
    old_int = signal.signal(signal.SIGINT, _note_interrupt)
    old_term = signal.signal(signal.SIGTERM, _note_interrupt)
    interrupted = False
    try:
        pending.reverse()
        changed = True
        while pending or running:
            if _stop:
                raise _Interrupted()
            while pending and len(running) < jobs:
                running.append(PointRun(pending.pop(), incsim, output,
                                        timeout).start())
            prog.show(len(running), jobs, force=changed)
            still = []
            changed = False
            for r in running:
                if r.poll():
                    changed = True
                    prog.finished_here += 1
                    if r.status == "ok":
                        prog.done += 1
                    else:
                        prog.failed += 1
                        prog.message("sweep: %s %s: %s" % (
                            describe(r.entry),
                            "timed out" if r.status == "timeout" else
                            "failed", r.error))
                else:
                    still.append(r)
            running = still
            if changed and not pending and not running:
                prog.show(0, jobs, force=True)
            if running:
                time.sleep(0.05)
    except (_Interrupted, KeyboardInterrupt):
        interrupted = True
        for r in running:
            r.abandon()
        prog.end()
        prog.message("sweep: interrupted: %d of %d points done; run the "
                     "same command again to resume" % (prog.done,
                                                       len(entries)))
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    if not interrupted:
        prog.end()
    return prog.done, prog.failed, interrupted


def run_task(manifest, hashes, stream=sys.stderr):
    """A Slurm array task: run these points one after the other (skipping
    finished ones) with the same PointRun as local runs. Returns the
    number that failed."""
    output, incsim = manifest["output"], manifest["incsim"]
    by_hash = {e["hash"]: e for e in manifest["points"]}
    failed = 0
    for h in hashes:
        e = by_hash.get(h)
        if e is None:
            stream.write("sweep: point %s is not in the manifest\n" % h)
            failed += 1
            continue
        if is_done(output, h):
            stream.write("sweep: %s already done\n" % describe(e))
            continue
        r = PointRun(e, incsim, output, float(manifest["timeout"]))
        r.start().wait()
        if r.status == "ok":
            stream.write("sweep: %s done in %.1fs\n" % (describe(e),
                                                         r.elapsed))
        else:
            failed += 1
            stream.write("sweep: %s %s: %s\n" % (describe(e), r.status,
                                                 r.error))
        stream.flush()
    return failed
