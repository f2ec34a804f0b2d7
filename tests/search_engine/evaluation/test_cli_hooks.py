"""Other helpers add `optimize` / `suite` through search_engine.search.cli_commands."""

import sys
import types

from search_engine import cli


def test_external_registrars_are_picked_up(monkeypatch):
    module = types.ModuleType("search_engine.search.cli_commands")

    def register_optimize(subparsers):
        p = subparsers.add_parser("optimize")
        p.add_argument("--problem")
        p.set_defaults(func=lambda args: 7)

    module.register_optimize = register_optimize
    monkeypatch.setitem(sys.modules, "search_engine.search.cli_commands", module)
    assert cli.main(["optimize", "--problem", "p.py"]) == 7


def test_missing_command_module_is_fine(monkeypatch):
    monkeypatch.setattr(cli, "EXTERNAL_REGISTRARS",
                        [("search_engine.search.no_such_module", "register_optimize")])
    parser = cli.build_parser()
    assert "evaluate" in parser.format_help()
    assert cli.main([]) == 2  # no command: help, exit 2
