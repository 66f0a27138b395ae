"""The Python packages import one way: .importlinter's contracts (layers, engines that do not know each other,
no cycle), checked by import-linter over the source."""

import subprocess
import sys

from p4rcp.toolchain import ROOT

# In a process of its own: import-linter configures logging and disables the loggers that exist when it
# runs, which would silence the control plane's log for every later test of the session.
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")


def test_the_packages_keep_their_import_contracts():
    done = subprocess.run([sys.executable, "-c", LINT, str(ROOT / ".importlinter")], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"an import goes against .importlinter's contracts:\n{done.stdout}{done.stderr}"
