// On a phone: what makes the page wider than the screen (the innermost
// elements whose right edge is past it, with a bit of their text).
(screen) => {
  // A mobile browser widens its layout to fit a page that is too wide:
  // the edge is the device's width when it is given.
  const edge = screen || innerWidth;
  const out = [];
  for (const e of document.querySelectorAll("article.bd-article *")) {
    const box = e.getBoundingClientRect();
    if (box.right > edge + 1 && !e.closest("pre, mjx-container")
        && ![...e.children].some(c =>
          c.getBoundingClientRect().right > edge + 1)) {
      out.push(`${e.tagName.toLowerCase()}.${e.className} ` +
               `(${Math.round(box.right)} px): ` +
               e.textContent.trim().slice(0, 60));
    }
  }
  return out.slice(0, 5);
}
