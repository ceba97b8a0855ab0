"""Freezes one rank of a data-parallel `kiln train` (SIGSTOP) mid-run and
checks that the others end it with an error within the timeout.

  freeze_rank.py METRICS RANK TIMEOUT [--signal NAME] -- COMMAND...
      runs COMMAND (mpirun ... kiln train ... --metrics METRICS
      --collective-timeout TIMEOUT), waits for 3 steps in METRICS, stops
      the kiln process of rank RANK, and prints the run's output, whether
      it exited non-zero, and whether it did so within TIMEOUT + 30 s.
      With --signal (TERM, INT, ...) that rank gets that signal instead of
      SIGSTOP (asked to stop after its step, not frozen).
"""
import os
import signal
import subprocess
import sys
import time


def lines(path):
    try:
        with open(path) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def parent(pid):
    """The parent of process `pid`, or 0."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            # pid (comm) state ppid ...: comm may hold spaces.
            return int(f.read().rsplit(')', 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def descends_from(pid, ancestor):
    while pid > 1:
        if pid == ancestor:
            return True
        pid = parent(pid)
    return False


def find_rank(rank, launcher):
    """The pid of the kiln process of `rank` (from its environment) that
    `launcher` started (not another run's on the same machine)."""
    marker = b'OMPI_COMM_WORLD_RANK=%d\0' % rank
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or not descends_from(int(entry), launcher):
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as f:
                command = f.read().split(b'\0')
            with open('/proc/%s/environ' % entry, 'rb') as f:
                environment = f.read()
        except OSError:
            continue
        if command and command[0].endswith(b'kiln') and marker in environment:
            return int(entry)
    return None


def main():
    metrics, rank, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    options = sys.argv[4:sys.argv.index('--')]
    sent = signal.SIGSTOP
    if options[:1] == ['--signal']:
        sent = getattr(signal, 'SIG' + options[1])
    command = sys.argv[sys.argv.index('--') + 1:]
    run = subprocess.Popen(command, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    deadline = time.time() + 300
    while lines(metrics) < 3:
        if run.poll() is not None or time.time() > deadline:
            run.kill()
            sys.exit('the run ended or stalled before step 3:\n' +
                     run.communicate()[0].decode())
        time.sleep(0.05)
    pid = find_rank(rank, run.pid)
    if pid is None:
        run.kill()
        sys.exit('no kiln process of rank %d' % rank)
    os.kill(pid, sent)
    frozen = time.time()
    try:
        output = run.communicate(timeout=limit + 120)[0].decode()
    except subprocess.TimeoutExpired:
        run.kill()
        output = run.communicate()[0].decode()
        print(output)
        sys.exit('no rank ended the run within %g s' % (limit + 120))
    finally:
        if sent == signal.SIGSTOP:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    took = time.time() - frozen
    print(output)
    print('%s rank %d; nonzero exit: %s; within the timeout: %s' %
          ('frozen' if sent == signal.SIGSTOP else 'signaled', rank,
           run.returncode != 0, took <= limit + 30))


main()
