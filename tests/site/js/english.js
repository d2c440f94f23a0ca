// The text a Chinese page shows a reader outside code, outputs and math,
// and its tooltips and placeholders: every text node with a Latin letter
// (menus and print-only headings included, shown or not) and every
// title, placeholder and tooltip attribute; read by checks.english_chrome.
// The language switch ("English") is left out: it is English on purpose.
() => {
  const skip = ["script", "style", "noscript", "pre", "code", "kbd",
                "mjx-container", ".cell_output", ".output", ".math",
                "a.btn-language-switch"].join(", ");
  const latin = /[A-Za-z]/;
  const found = [];
  const walker = document.createTreeWalker(document.body,
                                           NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (latin.test(node.data) && !node.parentElement.closest(skip)) {
      found.push(node.data.trim());
    }
  }
  for (const element of document.body.querySelectorAll(
      "[title], [placeholder], [data-bs-title]")) {
    if (element.closest("a.btn-language-switch")) continue;
    found.push(...["title", "placeholder", "data-bs-title"]
      .map(name => element.getAttribute(name))
      .filter(value => value && latin.test(value)));
  }
  return found;
}
