// The page's chrome where a phone or a printer meets it (site/static/
// book.css and book.js): the header's fullscreen button, the title the
// theme prints, and the identifiers inside tables and headings.
() => {
  const fullscreen = [...document.querySelectorAll(".btn-fullscreen-button")]
    .some(b => b.checkVisibility());
  const printed = document.querySelector("#jb-print-docs-body h1");
  const number = printed && printed.querySelector(".section-number");
  const tableCode = [...document.querySelectorAll(
      ":is(table, h1, h2, h3) code.literal")]
    .filter(c => /[A-Za-z0-9)][._][A-Za-z0-9_]/.test(c.textContent))
    .map(c => ({text: c.textContent,
                breaks: c.querySelectorAll("wbr").length,
                wrap: getComputedStyle(c).overflowWrap}));
  return {fullscreen, printedNumber: number ? number.textContent.trim() : "",
          tableCode};
}
