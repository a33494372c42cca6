from tpubench.main import run

run()
