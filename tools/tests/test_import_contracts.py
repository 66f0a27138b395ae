"""The Python packages import one way: .importlinter's contracts (layers, engines that do not know each other,
no cycle), checked by import-linter over the source."""

from importlinter.cli import lint_imports

from p4rcp.toolchain import ROOT


def test_the_packages_keep_their_import_contracts(capsys):
    status = lint_imports(config_filename=str(ROOT / ".importlinter"), no_cache=True, no_logo=True)
    report = capsys.readouterr().out
    assert status == 0, f"an import goes against .importlinter's contracts:\n{report}"
