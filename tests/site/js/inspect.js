// What a page shows: its title, math, code blocks, links, outputs that
// scroll, exercises and solutions, images, theme, language switch, footer;
// read by tests/site/test_pages.py.
async () => {
  if (window.MathJax && window.MathJax.startup) {
    await window.MathJax.startup.promise;
  }
  const article = document.querySelector("article.bd-article")
    || document.querySelector("main");
  const heading = article.querySelector("h1");
  let title = "";
  const number = heading && heading.querySelector(".section-number");
  if (heading) {
    const copy = heading.cloneNode(true);
    copy.querySelectorAll(".headerlink, .section-number")
      .forEach(e => e.remove());
    title = copy.textContent;
  }
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
  const download = [...document.querySelectorAll("a[href$='.ipynb']")]
    .map(a => a.href).filter(h => h.includes("/_sources/"));
  const launch = [...document.querySelectorAll("a[href]")].map(a => a.href)
    .filter(h => /mybinder|colab|deepnote|jupyterhub|thebe/.test(h));
  const terms = [...document.querySelectorAll("dl.glossary > dt")]
    .map(d => d.firstChild.textContent);
  const next = document.querySelector("a.right-next");
  const prev = document.querySelector("a.left-prev");
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
  const visible = e => !!e && e.checkVisibility(
    {visibilityProperty: true, opacityProperty: true})
    && e.getBoundingClientRect().height > 0;
  const exercises = [...article.querySelectorAll("div.exercise")].map(e => ({
    id: e.id,
    number: (e.querySelector(".caption-number") || {}).textContent || "",
  }));
  const solutions = [...article.querySelectorAll("div.solution")].map(s => {
    const title = s.querySelector(".admonition-title");
    const a = title && title.querySelector("a[href^='#']");
    const body = [...s.children].filter(c => c !== title);
    return {title: title ? title.textContent.trim() : "",
            body: body.map(c => c.textContent).join(" ").trim().slice(0, 80),
            href: a ? a.getAttribute("href").slice(1) : null,
            dropdown: s.classList.contains("dropdown"),
            shown: body.some(visible)};
  });
  const note = document.querySelector("p.book-downloads");
  // The header's download menu, and the licences named in the footer.
  const menu = [...document.querySelectorAll(
    ".dropdown-download-buttons .dropdown-menu a[href]")]
    .map(a => a.href);
  const licence = [...document.querySelectorAll("footer a")]
    .map(a => ({text: a.textContent.trim(), href: a.href}));
  const footer = document.querySelector("footer.bd-footer-content");
  const language = document.querySelector("a.btn-language-switch");
  const searchBoxes = [...document.querySelectorAll(
    "button.search-button-field, button.search-button")]
    .filter(b => b.checkVisibility({visibilityProperty: true})).length;
  return {
    title, documentTitle: document.title,
    sectionNumber: number ? number.textContent.trim() : null,
    headingVisible: !!heading && heading.getBoundingClientRect().height > 0,
    mathCount: math.length,
    mathRendered: math.filter(m => m.querySelector("mjx-container")).length,
    mathjaxLoaded: !!(window.MathJax && window.MathJax.startup),
    mathText,
    prose: prose.textContent,
    blocks, links, download, launch, terms,
    exercises, solutions,
    outputs: outputs.length, wide, columns, searchBoxes,
    notes: note ? [...note.querySelectorAll("a")].map(a => a.href) : [],
    noteText: note ? note.textContent : "",
    menu, licence,
    footer: footer ? footer.textContent : "",
    language: language ? {href: language.href,
                          target: language.getAttribute("target")} : null,
    images: [...document.images].map(i => ({
      src: i.currentSrc || i.src, alt: i.getAttribute("alt"),
      ok: i.complete && i.naturalWidth > 0})),
    next: next ? next.href : null, prev: prev ? prev.href : null,
    theme: document.documentElement.dataset.theme,
    background: getComputedStyle(document.body).backgroundColor,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  };
}
