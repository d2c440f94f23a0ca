// The book's own behaviour on top of sphinx-book-theme (site/static/book.js,
// added to every page by site/site_fixes.py).
//
// On a phone the sidebars open as dialogs (pydata-sphinx-theme). A tap on
// a link inside one leads somewhere (a section of this page, another page),
// so the dialog closes: the reader sees the section, not the list still
// covering it. The link is followed as usual.
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  const dialog = link && link.closest("dialog[open]");
  if (dialog && dialog.id.endsWith("-sidebar-modal")) dialog.close();
});

// The language switch leads to the same page in the other edition, and to
// the reader's section there: both editions give a section, a glossary term
// and a figure the same id (Sphinx keeps the ids it made from the English
// when it translates), so the switch takes the page's hash with it.
document.addEventListener("click", (event) => {
  const link = event.target.closest("a.btn-language-switch");
  if (link) link.hash = location.hash;
});
