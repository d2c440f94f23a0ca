// What a page shows (tests/test_site_pages.py reads it): its title, math,
// code, links, outputs, exercises and solutions, images and figures,
// downloads, footer, language switch, and the chrome a phone or a printer
// meets. On a phone (`screen`: its width): what makes the page wider, and
// what the chapter list's button opens.
async (screen) => {
  await window.MathJax?.startup?.promise;
  const article = document.querySelector("article.bd-article")
    || document.querySelector("main");
  const heading = article.querySelector("h1");
  const copy = heading?.cloneNode(true);
  copy?.querySelectorAll(".headerlink, .section-number")
    .forEach(e => e.remove());
  const math = [...article.querySelectorAll("span.math, div.math")];
  const prose = article.cloneNode(true);
  prose.querySelectorAll(
    "pre, code, script, style, mjx-container, .cell_output, .output"
  ).forEach(e => e.remove());
  const blocks = [...article.querySelectorAll("div[class*='highlight-']")]
    .filter(d => !d.closest(".cell_output"))
    .map(d => ({
      lexer: [...d.classList].find(c => c.startsWith("highlight-"))
        .slice("highlight-".length),
      cell: !!d.closest(".cell_input"),
      coloured: !!d.querySelector("pre span[class]"),
      copy: !!d.querySelector("button.copybtn"),
      // a code line cut by the box shows a shadow at that side
      cue: getComputedStyle(d.querySelector("pre")).backgroundImage
        .includes("radial-gradient"),
      px: parseFloat(getComputedStyle(d.querySelector("pre")).fontSize),
    }));
  const links = [...article.querySelectorAll("a[href]")]
    .map(a => a.href).filter(h => h.startsWith(location.origin));
  const launch = [...document.querySelectorAll("a[href]")].map(a => a.href)
    .filter(h => /mybinder|colab|deepnote|jupyterhub|thebe/.test(h));
  const terms = [...document.querySelectorAll("dl.glossary > dt")]
    .map(d => d.firstChild.textContent);
  // Outputs wider than their box: which one, and its widest line.
  const outputs = [...article.querySelectorAll(".cell_output pre")];
  const wide = outputs.map((pre, index) => ({pre, index}))
    .filter(({pre}) => pre.scrollWidth > pre.clientWidth)
    .map(({pre, index}) => {
      const lines = pre.textContent.split("\n");
      const longest = lines.reduce((a, b) => b.length > a.length ? b : a, "");
      return {index, scrollWidth: pre.scrollWidth, box: pre.clientWidth,
              chars: longest.length, line: longest.slice(0, 70)};
    });
  // How many characters of the output font one output line holds.
  let columns = null;
  if (outputs.length) {
    const pre = outputs[0], probe = document.createElement("span");
    probe.textContent = "x".repeat(100);
    pre.appendChild(probe);
    const style = getComputedStyle(pre);
    const inner = pre.clientWidth - parseFloat(style.paddingLeft)
      - parseFloat(style.paddingRight);
    columns = Math.floor(inner / (probe.getBoundingClientRect().width / 100));
    probe.remove();
  }
  // Rendered math: the text a screen reader gets, and any "\" glyph.
  const mathText = [...article.querySelectorAll("mjx-container")].map(m => ({
    text: (m.querySelector("mjx-assistive-mml") || m).textContent,
    backslashGlyphs: m.querySelectorAll("mjx-c.mjx-c5C").length,
  }));
  const exercises = [...article.querySelectorAll("div.exercise")].map(e => ({
    id: e.id,
    number: e.querySelector(".caption-number")?.textContent ?? "",
  }));
  const solutions = [...article.querySelectorAll("div.solution")].map(s => {
    const title = s.querySelector(".admonition-title");
    const a = title?.querySelector("a[href^='#']");
    return {title: title?.textContent.trim() ?? "",
            href: a?.getAttribute("href").slice(1) ?? null,
            dropdown: s.classList.contains("dropdown"),
            shown: [...s.children].some(c => c !== title && c.checkVisibility(
              {visibilityProperty: true, opacityProperty: true})
              && c.getBoundingClientRect().height > 0)};
  });
  // The figures the cells drew that this screen shows (of one drawn wide
  // and narrow, one): the width it is shown at, the width its output asks
  // for (a "retina" PNG: half its pixels), its link, box, right edge and
  // the line under it that says it scrolls.
  const figures = [...article.querySelectorAll("img")]
    .filter(i => i.getAttribute("src").includes("_images/")
            && i.getClientRects().length > 0)
    .map(i => {
      const link = i.closest("a");
      const box = i.getBoundingClientRect();
      const output = i.closest("div.cell_output");
      const cue = link ? getComputedStyle(link, "::after").content : "none";
      return {
        src: i.getAttribute("src").split("/").pop(),
        naturalWidth: i.naturalWidth,
        shown: box.width,
        asked: parseFloat(i.style.width || i.getAttribute("width"))
          || i.naturalWidth,
        link: link ? link.href : null,
        svg: /\.svg$/i.test(i.getAttribute("src")),
        narrow: i.classList.contains("phone-figure"),
        box: output ? output.clientWidth : null,
        right: box.right,
        screen: document.documentElement.clientWidth,
        cue: cue !== "none" && cue !== "normal" ? cue : null,
      };
    });
  // On a phone, the innermost elements past the screen's right edge.
  const overflow = [];
  const scrollWidth = document.documentElement.scrollWidth;
  if (screen && scrollWidth > screen) {
    const past = e => e.getBoundingClientRect().right > screen + 1;
    for (const e of article.querySelectorAll("*")) {
      if (past(e) && !e.closest("pre, mjx-container")
          && ![...e.children].some(past)) {
        overflow.push(`${e.tagName.toLowerCase()}.${e.className} ` +
                      `(${Math.round(e.getBoundingClientRect().right)} px): ` +
                      e.textContent.trim().slice(0, 60));
      }
    }
  }
  // The chrome (site/static/book.css and book.js): the header's fullscreen
  // button, the title the theme prints, identifiers in tables and headings.
  const chrome = {
    fullscreen: [...document.querySelectorAll(".btn-fullscreen-button")]
      .some(b => b.checkVisibility()),
    printedNumber: document.querySelector(
      "#jb-print-docs-body h1 .section-number")?.textContent.trim() ?? "",
    tableCode: [...document.querySelectorAll(
        ":is(table, h1, h2, h3) code.literal")]
      .filter(c => /[A-Za-z0-9)][._][A-Za-z0-9_]/.test(c.textContent))
      .map(c => ({text: c.textContent,
                  breaks: c.querySelectorAll("wbr").length,
                  wrap: getComputedStyle(c).overflowWrap})),
  };
  // On a phone, tap the chapter list's button: the links its dialog shows,
  // and how many read as the site's title; then close it.
  let primary = null;
  const button = screen && [...document.querySelectorAll(
    "button.primary-toggle")].find(b => b.checkVisibility());
  if (button) {
    button.click();
    const dialog = document.getElementById("pst-primary-sidebar-modal");
    const open = () => !!dialog && dialog.open;
    for (let i = 0; i < 50 && !open(); i++) {
      await new Promise(r => setTimeout(r, 20));
    }
    const links = open() ? [...dialog.querySelectorAll("a")]
      .filter(a => a.checkVisibility()) : [];
    const title = document.querySelector(".logo__title")?.textContent.trim();
    primary = {open: open(), titles: links.filter(
                 a => a.textContent.trim() === title).length,
               shown: links.filter(a => a.getBoundingClientRect().width > 0)
                 .map(a => a.getAttribute("href"))};
    if (open()) dialog.close();
  }
  const note = document.querySelector("p.book-downloads");
  const language = document.querySelector("a.btn-language-switch");
  const searchBoxes = [...document.querySelectorAll(
    "button.search-button-field, button.search-button")]
    .filter(b => b.checkVisibility({visibilityProperty: true})).length;
  return {
    title: copy?.textContent ?? "", documentTitle: document.title,
    sectionNumber: heading?.querySelector(".section-number")?.textContent
      .trim() ?? null,
    headingVisible: !!heading && heading.getBoundingClientRect().height > 0,
    mathCount: math.length,
    mathRendered: math.filter(m => m.querySelector("mjx-container")).length,
    mathjaxLoaded: !!window.MathJax?.startup,
    mathText,
    prose: prose.textContent,
    blocks, links, launch, terms,
    exercises, solutions, figures, overflow, chrome, primary,
    wide, columns, searchBoxes,
    notes: note ? [...note.querySelectorAll("a")].map(a => a.href) : [],
    noteText: note?.textContent ?? "",
    // the header's download menu, the licences named in the footer
    menu: [...document.querySelectorAll(
      ".dropdown-download-buttons .dropdown-menu a[href]")].map(a => a.href),
    licence: [...document.querySelectorAll("footer a")]
      .map(a => ({text: a.textContent.trim(), href: a.href})),
    footer: document.querySelector("footer.bd-footer-content")?.textContent
      ?? "",
    language: language ? {href: language.href,
                          target: language.getAttribute("target")} : null,
    images: [...document.images].map(i => ({
      src: i.currentSrc || i.src, alt: i.getAttribute("alt"),
      ok: i.complete && i.naturalWidth > 0})),
    next: document.querySelector("a.right-next")?.href ?? null,
    prev: document.querySelector("a.left-prev")?.href ?? null,
    theme: document.documentElement.dataset.theme,
    background: getComputedStyle(document.body).backgroundColor,
    scrollWidth,
  };
}
