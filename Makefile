# Shortcuts for tools/dev.py, which needs nothing but Python 3.11 and sets up
# .venv on first use. `make help` lists the commands.
PY := python3
DEV := $(PY) tools/dev.py

.PHONY: help setup book test test-pdf test-fast export outputs lab bench clean

help:
	@$(DEV) help

setup:
	$(DEV) setup
book:
	$(DEV) book
test:
	$(DEV) test
test-pdf:             # the two PDFs, printed and read (CI runs both)
	$(DEV) test --pdf
test-fast:            # everything but the website build and browser checks
	$(DEV) test -m "not site"
export:
	$(DEV) export
outputs:              # make outputs NOTEBOOKS=book/02_traversal.ipynb
	$(DEV) outputs $(NOTEBOOKS)
lab:
	$(DEV) lab
bench:
	$(DEV) bench
clean:
	rm -rf _build
