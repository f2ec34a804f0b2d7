"""The command line is one tree: every command is registered by `search_engine.cli`."""

from search_engine import cli


def test_every_command_is_registered():
    help_text = cli.build_parser().format_help()
    for command in ("evaluate", "optimize", "suite", "coverage"):
        assert command in help_text


def test_no_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "usage" in capsys.readouterr().out
