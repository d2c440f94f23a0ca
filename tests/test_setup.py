"""Which browser tools/dev.py hands the site's tests and the PDFs."""
import dev


def test_the_headless_shell_is_chosen_first_and_chromium_otherwise(
        tmp_path, monkeypatch):
    shell, full = tmp_path / "chromium-headless-shell", tmp_path / "chromium"
    monkeypatch.setattr(dev, "BROWSERS", (str(shell), str(full)))
    monkeypatch.delenv("BOOK_CHROMIUM", raising=False)
    assert dev.chromium() == str(shell)  # none installed: what to install
    full.touch()
    assert dev.chromium() == str(full)
    shell.touch()
    assert dev.chromium() == str(shell)
    monkeypatch.setenv("BOOK_CHROMIUM", "/opt/another/chrome")
    assert dev.chromium() == "/opt/another/chrome"
