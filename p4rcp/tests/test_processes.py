import subprocess
import sys

from p4rcp.processes import stop_processes


def test_a_process_that_ignores_sigterm_is_killed_and_reaped():
    stubborn = subprocess.Popen([sys.executable, "-c",
                                 "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
    assert stubborn.stdout.readline() == b"ready\n"    # SIGTERM is ignored from here on
    polite = subprocess.Popen(["sleep", "60"])
    exited = subprocess.Popen(["true"])
    exited.wait()
    stop_processes([stubborn, polite, exited], grace_s=0.5)
    assert stubborn.returncode == -9 and polite.returncode == -15 and exited.returncode == 0
