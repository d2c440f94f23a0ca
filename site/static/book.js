// The book's own behaviour on top of sphinx-book-theme (added to every page
// by site/site_fixes.py).

// On a phone the sidebars open as dialogs (pydata-sphinx-theme). A tap on a
// link inside one leads somewhere, so the dialog closes: the reader sees the
// section, not the list still covering it.
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  const dialog = link && link.closest("dialog[open]");
  if (dialog && dialog.id.endsWith("-sidebar-modal")) dialog.close();
});

// The language switch leads to the same page in the other edition, at the
// reader's section: Sphinx keeps the ids it made from the English when it
// translates, so the switch takes the page's hash with it.
document.addEventListener("click", (event) => {
  const link = event.target.closest("a.btn-language-switch");
  if (link) link.hash = location.hash;
});

// In a table or a heading, an identifier may break after a "." or a single
// "_" and nowhere else (book.css): `register_full_` / `backward_hook` on a
// phone, not mid-word (tests/test_site_pages.py uses the same pattern).
const BREAK_AFTER = /(?<=[A-Za-z0-9)]\.)(?=\S)|(?<=[A-Za-z0-9]_)(?=[A-Za-z0-9])/;
for (const span of document.querySelectorAll(
    ":is(table, h1, h2, h3) code.literal span.pre")) {
  const parts = span.textContent.split(BREAK_AFTER);
  if (parts.length < 2) continue;
  span.replaceChildren(...parts.flatMap((part, i) =>
    i ? [document.createElement("wbr"), part] : [part]));
}

// Printed from the browser, a chapter keeps its number: the theme prints its
// own copy of the title (#jb-print-docs-body) without the "5. " of the page's.
{
  const number = document.querySelector("article h1 > span.section-number");
  const printed = document.querySelector("#jb-print-docs-body h1");
  if (number && printed) printed.prepend(number.cloneNode(true));
}

// A figure wider than its box (on a phone, most) gets .book-too-wide: book.css
// says it scrolls and opens whole when tapped.
function bookTooWide() {
  for (const box of document.querySelectorAll("div.cell_output")) {
    box.classList.toggle("book-too-wide", box.querySelector("img") !== null
                         && box.scrollWidth > box.clientWidth + 1);
  }
}
document.addEventListener("DOMContentLoaded", bookTooWide);
window.addEventListener("resize", bookTooWide);
