from tpubench.cli.main import run

run()
