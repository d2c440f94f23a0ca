// The figures the cells drew on this page (images under _images/) that
// this screen shows (a figure drawn twice, wide and narrow, shows one):
// the pixels of the file, the CSS width it is shown at, the width its
// output asks for (IPython's "retina" PNGs ask for half their pixels:
// myst-nb writes it as style="width: ...px"), the link that opens it
// alone, and whether it shows whole: its box's width, its right edge
// against the screen's, and the line under it that says it scrolls.
() => [...document.querySelectorAll("article.bd-article img")]
  .filter(i => i.getAttribute("src").includes("_images/"))
  .filter(i => i.getClientRects().length > 0)
  .map(i => {
    const link = i.closest("a");
    const box = i.getBoundingClientRect();
    const output = i.closest("div.cell_output");
    const cue = link ? getComputedStyle(link, "::after").content : "none";
    return {
      src: i.getAttribute("src").split("/").pop(),
      naturalWidth: i.naturalWidth,
      shown: box.width,
      asked: i.style.width ? parseFloat(i.style.width)
        : i.getAttribute("width") ? parseFloat(i.getAttribute("width"))
        : i.naturalWidth,
      link: link ? link.href : null,
      svg: /\.svg$/i.test(i.getAttribute("src")),
      narrow: i.classList.contains("phone-figure"),
      box: output ? output.clientWidth : null,
      right: box.right,
      screen: document.documentElement.clientWidth,
      cue: cue !== "none" && cue !== "normal" ? cue : null,
    };
  })
